// Command paramsgen writes policies/params.default.yaml from
// policies/params.schema.json: each parameter's default as its value, in
// the schema's order, under its description as a comment. A parameter is
// then written once, in the schema, which the engine validates params
// files against. Run it with `go generate ./policies`; a test fails while
// the file differs from what it would write.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/goccy/go-yaml"
)

// header opens the file: what it is, and where to change it.
const header = `# Default parameters for the gpuhost policy pack, loaded as data.gpuhost.params
# when no params file is given. A user's params file replaces these key by key
# at the top level (a key it sets replaces the whole default value).
#
# Generated from params.schema.json by go generate ./policies: change a
# parameter there, not here. To scan with other values, copy this file, edit
# the copy and pass it with --params.
`

// width is the longest a comment line gets, "# " included.
const width = 78

func main() {
	in := flag.String("schema", "params.schema.json", "the parameters' JSON Schema")
	out := flag.String("o", "params.default.yaml", "file to write")
	flag.Parse()
	schema, err := os.ReadFile(*in)
	if err == nil {
		var b []byte
		if b, err = generate(schema); err == nil {
			err = os.WriteFile(*out, b, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "paramsgen:", err)
		os.Exit(1)
	}
}

// generate returns params.default.yaml for the schema given as JSON.
func generate(schema []byte) ([]byte, error) {
	var doc yaml.MapSlice
	if err := yaml.UnmarshalWithOptions(schema, &doc, yaml.UseOrderedMap()); err != nil {
		return nil, fmt.Errorf("parsing the schema: %w", err)
	}
	props, ok := lookup(doc, "properties").(yaml.MapSlice)
	if !ok {
		return nil, errors.New("the schema has no properties")
	}
	var b bytes.Buffer
	b.WriteString(header)
	for _, item := range props {
		name, _ := item.Key.(string)
		p, ok := item.Value.(yaml.MapSlice)
		if !ok {
			return nil, fmt.Errorf("%s: not an object", name)
		}
		desc, _ := lookup(p, "description").(string)
		if desc == "" {
			return nil, fmt.Errorf("%s: no description", name)
		}
		def, found := find(p, "default")
		if !found {
			return nil, fmt.Errorf("%s: no default", name)
		}
		value, err := yaml.MarshalWithOptions(yaml.MapSlice{{Key: name, Value: def}}, yaml.IndentSequence(true), yaml.Indent(2))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		b.WriteString("\n")
		b.WriteString(comment(desc))
		b.Write(value)
	}
	return b.Bytes(), nil
}

// find returns the value of key in m, and whether m has it.
func find(m yaml.MapSlice, key string) (any, bool) {
	for _, item := range m {
		if item.Key == key {
			return item.Value, true
		}
	}
	return nil, false
}

// lookup is find's value alone.
func lookup(m yaml.MapSlice, key string) any {
	v, _ := find(m, key)
	return v
}

// comment is text as YAML comment lines of at most width characters.
func comment(text string) string {
	var b strings.Builder
	line := "#"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > width && line != "#" {
			b.WriteString(line + "\n")
			line = "#"
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
	return b.String()
}
