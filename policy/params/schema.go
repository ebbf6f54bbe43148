// Package params is what the policy pack's parameters are held to: the
// schema a params file must validate against, and which parameters each
// check reads.
package params

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// SchemaFile is the name of a pack's parameter schema, at its root.
const SchemaFile = "params.schema.json"

// maxSchemaProblems bounds how many schema violations one error lists: a
// params file wrong everywhere needs its first fixes shown, not a page.
const maxSchemaProblems = 20

// Validate checks params against a JSON Schema (any draft the
// validator knows; the pack's is 2020-12). The error lists each violation as
// "FIELD: problem", the field a dotted path from the top of the params
// ("allowed_ports.0"), so a user can find what to fix.
func Validate(params map[string]any, schemaJSON []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return fmt.Errorf("parsing %s: %w", SchemaFile, err)
	}
	c := jsonschema.NewCompiler()
	// The schema must be self-contained: a $ref to anything but itself or
	// the drafts' metaschemas fails here instead of fetching.
	c.UseLoader(noLoader{})
	if err := c.AddResource(SchemaFile, doc); err != nil {
		return fmt.Errorf("loading %s: %w", SchemaFile, err)
	}
	sch, err := c.Compile(SchemaFile)
	if err != nil {
		return fmt.Errorf("compiling %s: %w", SchemaFile, err)
	}
	// The validator wants JSON's shapes (json.Number, []any, map[string]any),
	// whatever the YAML decoder produced.
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encoding params: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("encoding params: %w", err)
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	p := message.NewPrinter(language.English)
	var problems []string
	leaves(ve, 0, func(e *jsonschema.ValidationError) {
		field := strings.Join(e.InstanceLocation, ".")
		if field == "" {
			field = "(top level)"
		}
		problems = append(problems, field+": "+e.ErrorKind.LocalizedString(p))
	})
	sort.Strings(problems)
	problems = uniq(problems)
	more := ""
	if len(problems) > maxSchemaProblems {
		more = fmt.Sprintf("; and %d more", len(problems)-maxSchemaProblems)
		problems = problems[:maxSchemaProblems]
	}
	return fmt.Errorf("params do not match %s: %s%s", SchemaFile, strings.Join(problems, "; "), more)
}

// leaves calls fn on each innermost violation: the outer ones only say
// "a property failed", the inner ones say how.
func leaves(e *jsonschema.ValidationError, depth int, fn func(*jsonschema.ValidationError)) {
	if len(e.Causes) == 0 || depth > 32 {
		fn(e)
		return
	}
	for _, c := range e.Causes {
		leaves(c, depth+1, fn)
	}
}

func uniq(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: the params schema may not reference other documents", url)
}

// maxSchemaFile bounds a pack's params schema, as the engine bounds a
// policy file.
const maxSchemaFile = 4 << 20

// ValidateFor validates the params read from file (named in the error)
// against the schema of the pack they configure: the params.schema.json of
// the first directory in policyPaths that has one, else embedded() (the
// default pack's schema). A pack that only extends the default one is
// still checked against the default schema, which allows keys it does not
// describe.
func ValidateFor(params map[string]any, file string, policyPaths []string, embedded func() ([]byte, error)) error {
	var schema []byte
	var name string
	for _, p := range policyPaths {
		info, err := os.Stat(p)
		if err != nil || !info.IsDir() {
			continue
		}
		data, err := userfile.Read(filepath.Join(p, SchemaFile), maxSchemaFile)
		if err == nil {
			schema, name = data, filepath.Join(p, SchemaFile)
			break
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("reading %s: %w", filepath.Join(p, SchemaFile), err)
		}
	}
	if schema == nil {
		data, err := embedded()
		if err != nil {
			return fmt.Errorf("reading the embedded %s: %w", SchemaFile, err)
		}
		schema, name = data, "embedded "+SchemaFile
	}
	if err := Validate(params, schema); err != nil {
		return fmt.Errorf("--params %s (checked against %s): %w", file, name, err)
	}
	return nil
}
