package facts

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// SchemaJSON is the JSON Schema (draft 2020-12) of gpuhost.facts/v1,
// generated from the Go types of this package: their JSON tags, the
// constraints in their jsonschema tags and their doc comments
// (internal/schemagen says what else it writes down).
//
//go:generate go run ./internal/schemagen -o schema.json
//go:embed schema.json
var SchemaJSON []byte

// schemaURL names the embedded schema inside the compiler; it matches the
// schema's $id so that its $refs resolve locally and nothing is fetched.
const schemaURL = "https://github.com/gpuhost/gpuhost/facts/schema.json"

// maxReported bounds how many violations an error names: the first few say
// what is wrong, a hundred more only bury them.
const maxReported = 5

var (
	compileOnce sync.Once
	compiled    *validator
	compileErr  error
)

// validator holds the compiled schema. Besides the whole schema it keeps
// the schema split at the top level: a shell that checks only the root
// object's own keywords (type, required, additionalProperties) and one
// schema per top-level property. Validating each member against its own
// schema and the object against the shell accepts exactly what the whole
// schema accepts, because the root has no keyword that looks at a member in
// context; the split lets a member that many hosts share, byte for byte
// (the package inventory of one image), be parsed and validated once.
type validator struct {
	full  *jsonschema.Schema
	shell *jsonschema.Schema            // nil when the schema cannot be split
	props map[string]*jsonschema.Schema // by top-level property name
	// fast holds the same members compiled for fastCheck, which accepts
	// the plain valid members at a fraction of the cost and leaves every
	// other verdict to props. Nil when the schema uses a keyword fastCheck
	// does not know.
	fast  map[string]*node
	names map[string]string // every property name in the schema
	memo  *memberMemo       // nil: no memo
	// nested holds collections nested in members (see parser.nested);
	// nil: none.
	nested *memberMemo
}

// schema compiles SchemaJSON once; the compiled schema is safe for
// concurrent use.
func schema() (*validator, error) {
	compileOnce.Do(func() {
		compiled, compileErr = compile(SchemaJSON)
		if compiled != nil {
			compiled.memo = newMemberMemo(memoBytes)
			compiled.nested = newMemberMemo(memoBytes)
		}
	})
	return compiled, compileErr
}

// splitKeywords are the root keywords the split knows how to honour; any
// other keyword at the root and the schema is only ever used whole.
var splitKeywords = map[string]bool{
	"$schema": true, "$id": true, "title": true, "description": true, "$comment": true, "$defs": true,
	"type": true, "required": true, "additionalProperties": true, "properties": true,
}

func compile(schemaJSON []byte) (*validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("parsing embedded facts schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	// No loader: the schema is self-contained and must never reach
	// the network or the file system.
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("loading embedded facts schema: %w", err)
	}
	v := &validator{names: map[string]string{}}
	if v.full, err = c.Compile(schemaURL); err != nil {
		return nil, fmt.Errorf("compiling embedded facts schema: %w", err)
	}
	collectNames(doc, v.names, 0)
	root, _ := doc.(map[string]any)
	props, _ := root["properties"].(map[string]any)
	splittable := root != nil && props != nil && root["additionalProperties"] == false
	shellProps := map[string]any{}
	for k := range root {
		splittable = splittable && splitKeywords[k]
	}
	for name := range props {
		// The name goes into a URL fragment unescaped.
		splittable = splittable && plainName(name)
		shellProps[name] = true
	}
	if !splittable {
		return v, nil
	}
	shell := map[string]any{"properties": shellProps}
	for _, k := range []string{"$schema", "type", "required", "additionalProperties"} {
		if x, ok := root[k]; ok {
			shell[k] = x
		}
	}
	if err := c.AddResource(shellURL, shell); err != nil {
		return nil, fmt.Errorf("loading embedded facts schema: %w", err)
	}
	if v.shell, err = c.Compile(shellURL); err != nil {
		return nil, fmt.Errorf("compiling embedded facts schema: %w", err)
	}
	v.props = map[string]*jsonschema.Schema{}
	for name := range props {
		if v.props[name], err = c.Compile(schemaURL + "#/properties/" + name); err != nil {
			return nil, fmt.Errorf("compiling embedded facts schema: %w", err)
		}
	}
	if fast, err := compileFast(doc); err == nil {
		v.fast = fast.properties
	}
	return v, nil
}

// shellURL names the split schema's shell inside the compiler.
const shellURL = "https://github.com/gpuhost/gpuhost/facts/schema-shell.json"

func plainName(s string) bool {
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// collectNames gathers every key of every "properties" object in the schema.
func collectNames(node any, names map[string]string, depth int) {
	if depth > 64 {
		return
	}
	switch n := node.(type) {
	case map[string]any:
		if props, ok := n["properties"].(map[string]any); ok {
			for name := range props {
				names[name] = name
			}
		}
		for _, x := range n {
			collectNames(x, names, depth+1)
		}
	case []any:
		for _, x := range n {
			collectNames(x, names, depth+1)
		}
	}
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("facts schema refers to %s, which is not embedded", url)
}

// Validate checks a facts document against the schema. doc may be a *Facts,
// a Facts, raw JSON ([]byte or json.RawMessage), or an already decoded JSON
// value; anything but raw JSON is marshalled first so that the check sees
// exactly what a saved facts file would hold. The error names the JSON
// pointer of the first few violations.
func Validate(doc any) error {
	switch d := doc.(type) {
	case []byte:
		return ValidateJSON(d)
	case json.RawMessage:
		return ValidateJSON(d)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encoding facts for validation: %w", err)
	}
	return ValidateJSON(data)
}

// ValidateJSON checks one JSON-encoded facts document against the schema.
func ValidateJSON(data []byte) error {
	_, err := DecodeJSON(data)
	return err
}

// DecodeJSON parses a facts document and validates it against the schema,
// returning the decoded value (objects as map[string]any, numbers as
// json.Number) so that callers need not parse the same bytes twice. Parts of
// the value may be shared with the values of other documents that hold the
// same bytes there, so it must not be modified.
func DecodeJSON(data []byte) (any, error) {
	v, err := schema()
	if err != nil {
		return nil, err
	}
	if len(data) > countAbove {
		if n := countValues(data, MaxValues); n > MaxValues {
			return nil, fmt.Errorf("parsing facts document: more than %d JSON values in %d bytes; no host's facts hold so many", MaxValues, len(data))
		}
	}
	return v.decode(data)
}

// MaxValues bounds the JSON values of one document. A decoded value takes
// tens of times its bytes ([0,0,...] is two bytes a value), so the size
// limit alone let a 64 MiB document take gigabytes; a host with thousands
// of packages, GPUs and listeners holds tens of thousands of values.
const MaxValues = 1 << 20

// countAbove is the size past which DecodeJSON counts a document's values
// before parsing it: a smaller document cannot hold more than MaxValues.
const countAbove = 2 * MaxValues

// countValues returns at least the number of values in data, or a number
// past limit once it is clear there are more: the commas and the openings
// of arrays and objects outside strings, plus one.
func countValues(data []byte, limit int) int {
	n := 1
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case inString:
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ',' || c == '[' || c == '{':
			if n++; n > limit {
				return n
			}
		}
	}
	return n
}

// decode parses and validates data member by member (see validator). Any
// failure on the way hands the document to decodeWhole, so that every error
// is the reference parse's or the whole schema's, worded as it always was.
//
// The top-level object is read here, strictly, and each member's extent is
// found by skipping over it (see skipValue) before anything parses it: a
// member whose exact bytes the memo holds was parsed and validated whole
// before, so hosts of one image pay for their package inventory and
// baseline once, not once each. Any other member is parsed, and so checked,
// on its own.
func (v *validator) decode(data []byte) (any, error) {
	if v.shell == nil {
		return v.decodeWhole(data)
	}
	i := skipSpace(data, 0)
	if i == len(data) || data[i] != '{' {
		return v.decodeWhole(data)
	}
	i = skipSpace(data, i+1)
	obj := map[string]any{}
	valid := true
	for first := true; ; first = false {
		if first && i < len(data) && data[i] == '}' {
			i++
			break
		}
		end, ok := skipString(data, i)
		if !ok {
			return v.decodeWhole(data)
		}
		name, err := unquote(data[i:end], v.names)
		if _, repeated := obj[name]; err != nil || repeated {
			return v.decodeWhole(data)
		}
		i = skipSpace(data, end)
		if i == len(data) || data[i] != ':' {
			return v.decodeWhole(data)
		}
		i = skipSpace(data, i+1)
		if end, ok = skipValue(data, i); !ok {
			return v.decodeWhole(data)
		}
		raw := data[i:end]
		if tree, ok := v.memo.get(name, raw); ok {
			obj[name] = tree
		} else {
			tree, err := parseJSON(raw, v.names, v.nested)
			if err != nil {
				return v.decodeWhole(data)
			}
			obj[name] = tree
			if sch := v.props[name]; sch != nil {
				switch fn := v.fast[name]; {
				case fn != nil && fn.fastCheck(tree, 0):
					v.memo.put(name, raw, tree)
				case sch.Validate(tree) != nil:
					valid = false
				default:
					v.memo.put(name, raw, tree)
				}
			}
		}
		i = skipSpace(data, end)
		if i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
			continue
		}
		if i == len(data) || data[i] != '}' {
			return v.decodeWhole(data)
		}
		i++
		break
	}
	if skipSpace(data, i) != len(data) {
		return v.decodeWhole(data)
	}
	if valid && v.shell.Validate(obj) == nil {
		return obj, nil
	}
	if err := v.validateWhole(obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// decodeWhole is the reference path: encoding/json's parse and the whole
// schema.
func (v *validator) decodeWhole(data []byte) (any, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parsing facts document: %w", err)
	}
	// The reference parse keeps a repeated name's last value; see jsonOptions.
	if _, err := jsontext.NewDecoder(bytes.NewReader(data), jsonOptions...).ReadValue(); err != nil {
		return nil, fmt.Errorf("parsing facts document: %w", err)
	}
	if err := v.validateWhole(inst); err != nil {
		return nil, err
	}
	return inst, nil
}

// validateWhole holds inst to the whole schema and words its violations.
func (v *validator) validateWhole(inst any) error {
	err := v.full.Validate(inst)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return fmt.Errorf("validating facts document: %w", err)
	}
	return summarize(verr)
}

// violation is one leaf of the validator's error tree.
type violation struct {
	path string
	msg  string
}

// summarize flattens the validator's error tree into its leaves, which are
// the actionable violations, and names the first few by JSON pointer.
func summarize(verr *jsonschema.ValidationError) error {
	p := message.NewPrinter(language.English)
	var leaves []violation
	seen := map[violation]bool{}
	// Walk iteratively with a bound: the tree mirrors the schema, which is
	// ours and small, but a loop over someone else's structure stays bounded.
	stack := []*jsonschema.ValidationError{verr}
	for steps := 0; len(stack) > 0 && steps < 10000; steps++ {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(e.Causes) > 0 {
			for i := len(e.Causes) - 1; i >= 0; i-- {
				stack = append(stack, e.Causes[i])
			}
			continue
		}
		v := violation{path: pointer(e.InstanceLocation), msg: e.ErrorKind.LocalizedString(p)}
		if !seen[v] {
			seen[v] = true
			leaves = append(leaves, v)
		}
	}
	sort.SliceStable(leaves, func(i, j int) bool { return leaves[i].path < leaves[j].path })
	var b strings.Builder
	b.WriteString("facts document does not match " + Schema + ": ")
	for i, v := range leaves {
		if i == maxReported {
			fmt.Fprintf(&b, "; and %d more", len(leaves)-maxReported)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "at %s: %s", v.path, v.msg)
	}
	return errors.New(b.String())
}

// pointer renders an instance location as a JSON pointer (RFC 6901), "/"
// for the document itself.
func pointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		tok = strings.ReplaceAll(tok, "~", "~0")
		b.WriteString(strings.ReplaceAll(tok, "/", "~1"))
	}
	return b.String()
}
