package facts

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// SchemaJSON is the JSON Schema (draft 2020-12) of gpuhost.facts/v1. It
// mirrors the JSON tags of Facts; a test keeps the two in step.
//
//go:embed schema.json
var SchemaJSON []byte

// schemaURL names the embedded schema inside the compiler; it matches the
// schema's $id so that its $refs resolve locally and nothing is fetched.
const schemaURL = "https://github.com/gpuhost/gpuhost/checks/facts/schema.json"

// maxReported bounds how many violations an error names: the first few say
// what is wrong, a hundred more only bury them.
const maxReported = 5

var (
	compileOnce sync.Once
	compiled    *jsonschema.Schema
	compileErr  error
)

// schema compiles SchemaJSON once; the compiled schema is safe for
// concurrent use.
func schema() (*jsonschema.Schema, error) {
	compileOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
		if err != nil {
			compileErr = fmt.Errorf("parsing embedded facts schema: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		// No loader: the schema is self-contained and must never reach
		// the network or the file system.
		c.UseLoader(noLoader{})
		if err := c.AddResource(schemaURL, doc); err != nil {
			compileErr = fmt.Errorf("loading embedded facts schema: %w", err)
			return
		}
		compiled, compileErr = c.Compile(schemaURL)
		if compileErr != nil {
			compileErr = fmt.Errorf("compiling embedded facts schema: %w", compileErr)
		}
	})
	return compiled, compileErr
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
// json.Number) so that callers need not parse the same bytes twice.
func DecodeJSON(data []byte) (any, error) {
	sch, err := schema()
	if err != nil {
		return nil, err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parsing facts document: %w", err)
	}
	err = sch.Validate(inst)
	if err == nil {
		return inst, nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return nil, fmt.Errorf("validating facts document: %w", err)
	}
	return nil, summarize(verr)
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
