// Package jsonschemagen writes the JSON Schema of a Go document type: the
// facts document's (facts/schema.json) and the report's
// (reports/schema.json), each from the types their programs write, so that
// neither is a second description kept by hand.
//
// Beyond what invopop/jsonschema reflects, it writes down what
// encoding/json does with nil: a slice may be null (Go writes a nil slice
// as null), and so may a pointer or a map without omitempty, unless the
// field is tagged factschema:"notnull" because its constructor never
// leaves it nil. A map tagged factschema:"locations" takes as keys only
// the JSON names of its struct's fields tagged factschema:"located": the
// places in a file where those settings are set.
package jsonschemagen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
)

// tagKey is the struct tag Generate reads beside json and jsonschema.
const tagKey = "factschema"

// Options say what Generate writes and where the doc comments are.
type Options struct {
	// ID is the schema's $id, Title its title, Comment its $comment.
	ID, Title, Comment string
	// Package is the import path of the types' package, and Dir its
	// source folder, whose doc comments become descriptions.
	Package, Dir string
}

// Generate returns the JSON Schema of v's type, a struct, as encoding/json
// writes it: invopop/jsonschema's reflection, with each field's doc
// comment as its description, and what encoding/json does with nil
// written down (see the package comment).
func Generate(v any, o Options) ([]byte, error) {
	r := &jsonschema.Reflector{ExpandedStruct: true}
	if err := r.AddGoComments(o.Package, o.Dir); err != nil {
		return nil, fmt.Errorf("reading the doc comments in %s: %w", o.Dir, err)
	}
	s := r.Reflect(v)
	s.ID = jsonschema.ID(o.ID)
	s.Title = o.Title
	s.Comments = o.Comment
	f := fixer{defs: s.Definitions, done: map[string]bool{}}
	if err := f.object(s, reflect.TypeOf(v).Elem()); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// fixer walks the reflected schema beside the Go types it came from.
type fixer struct {
	defs jsonschema.Definitions
	done map[string]bool
}

// object fixes the schema s of struct type t, field by field, embedded
// structs' fields included as encoding/json flattens them.
func (f fixer) object(s *jsonschema.Schema, t reflect.Type) error {
	fields := flatten(t)
	for _, fd := range fields {
		name, opts, _ := strings.Cut(fd.Tag.Get("json"), ",")
		if name == "" {
			name = fd.Name
		}
		p, ok := s.Properties.Get(name)
		if !ok {
			return fmt.Errorf("%s.%s: no property %q in the reflected schema", t.Name(), fd.Name, name)
		}
		ours := strings.Split(fd.Tag.Get(tagKey), ",")
		omit := slices.Contains(strings.Split(opts, ","), "omitempty")
		k := fd.Type.Kind()
		nullable := (k == reflect.Slice || (k == reflect.Pointer || k == reflect.Map) && !omit) && !slices.Contains(ours, "notnull")
		if slices.Contains(ours, "locations") {
			if err := closeKeys(p, t, fields); err != nil {
				return err
			}
		}
		if err := f.value(p, fd.Type, nullable, t.Name()+"."+fd.Name); err != nil {
			return err
		}
	}
	return nil
}

// value fixes the schema p of a value of type t.
func (f fixer) value(p *jsonschema.Schema, t reflect.Type, nullable bool, where string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return fmt.Errorf("%s: a []byte is base64 in JSON; give it a type of its own", where)
		}
		if err := f.value(p.Items, t.Elem(), false, where+"[]"); err != nil {
			return err
		}
	case reflect.Map:
		// A nil slice in a map is null too.
		elemNull := t.Elem().Kind() == reflect.Slice
		if p.AdditionalProperties != nil && p.AdditionalProperties != jsonschema.FalseSchema {
			if err := f.value(p.AdditionalProperties, t.Elem(), elemNull, where+"[*]"); err != nil {
				return err
			}
		}
		if p.Properties != nil {
			for pair := p.Properties.Oldest(); pair != nil; pair = pair.Next() {
				if err := f.value(pair.Value, t.Elem(), elemNull, where+"."+pair.Key); err != nil {
					return err
				}
			}
		}
	case reflect.Struct:
		if p.Ref != "" {
			if nullable {
				return fmt.Errorf("%s: a struct that may be null; give it omitempty", where)
			}
			name := strings.TrimPrefix(p.Ref, "#/$defs/")
			def, ok := f.defs[name]
			if !ok {
				return fmt.Errorf("%s: no definition %s", where, name)
			}
			if f.done[name] {
				return nil
			}
			f.done[name] = true
			return f.object(def, t)
		}
		if err := f.object(p, t); err != nil {
			return err
		}
	}
	if nullable {
		return orNull(p, where)
	}
	return nil
}

// orNull lets the value p describes be null too.
func orNull(p *jsonschema.Schema, where string) error {
	if p.Type == "" {
		return fmt.Errorf("%s: a value that may be null has no type to add null to", where)
	}
	if p.Extras == nil {
		p.Extras = map[string]any{}
	}
	p.Extras["type"] = []string{p.Type, "null"}
	p.Type = ""
	return nil
}

// closeKeys makes p, the schema of a map[string]V, an object whose keys
// are the JSON names of the fields of t tagged located.
func closeKeys(p *jsonschema.Schema, t reflect.Type, fields []reflect.StructField) error {
	if p.AdditionalProperties == nil {
		return fmt.Errorf("%s: a locations field that is not a map", t.Name())
	}
	val := p.AdditionalProperties
	if p.Properties == nil {
		p.Properties = jsonschema.NewProperties()
	}
	for _, fd := range fields {
		if !slices.Contains(strings.Split(fd.Tag.Get(tagKey), ","), "located") {
			continue
		}
		name, _, _ := strings.Cut(fd.Tag.Get("json"), ",")
		c := *val
		p.Properties.Set(name, &c)
	}
	if p.Properties.Len() == 0 {
		return fmt.Errorf("%s: a locations field but no field tagged located", t.Name())
	}
	p.AdditionalProperties = jsonschema.FalseSchema
	return nil
}

// flatten lists the fields of t as encoding/json sees them: exported, not
// "-", and an untagged embedded struct's in its place.
func flatten(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		fd := t.Field(i)
		if !fd.IsExported() || fd.Tag.Get("json") == "-" {
			continue
		}
		if fd.Anonymous && fd.Tag.Get("json") == "" && fd.Type.Kind() == reflect.Struct {
			out = append(out, flatten(fd.Type)...)
			continue
		}
		out = append(out, fd)
	}
	return out
}
