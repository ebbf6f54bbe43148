package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite reports/schema.json, as go generate ./reports does")

// TestSchemaIsGenerated fails while reports/schema.json is not what
// go generate ./reports writes from the Go types as they are.
func TestSchemaIsGenerated(t *testing.T) {
	t.Chdir("../..")
	got, err := generate(".")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "schema.json", got, *update)
}

// TestGoldenReportsMatchTheSchema holds every JSON report the repository
// keeps as a golden file to the published schema: a report that a consumer
// validating against schema.json would refuse is a broken contract, whatever
// our own renderer thinks of it.
func TestGoldenReportsMatchTheSchema(t *testing.T) {
	raw, err := os.ReadFile("../../schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("parsing schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(schemaID)
	if err != nil {
		t.Fatalf("compiling schema.json: %v", err)
	}
	var files []string
	for _, pattern := range []string{
		"../../../cmd/gpuhost/testdata/stable/*.json",
		"../../../render/report/testdata/golden/*.json",
	} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 3 {
		t.Fatalf("found %d golden JSON reports; the globs no longer match where they are kept", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("parsing %s: %v", f, err)
			}
			if err := sch.Validate(v); err != nil {
				t.Errorf("%s does not match reports/schema.json:\n%v", f, err)
			}
		})
	}
}
