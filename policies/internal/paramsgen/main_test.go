package main

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite policies/params.default.yaml, as go generate ./policies does")

// TestDefaultsAreGenerated fails while params.default.yaml is not what
// go generate ./policies writes from params.schema.json: a parameter
// added to the schema without regenerating, or the file edited by hand.
func TestDefaultsAreGenerated(t *testing.T) {
	schema, err := os.ReadFile("../../params.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := generate(schema)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "../../params.default.yaml", got, *update)
}

// A parameter the schema gives no default or no description has nothing
// to write: the generator says which.
func TestRefusesAParameterWithoutDefault(t *testing.T) {
	for schema, want := range map[string]string{
		`{"properties": {"a": {"description": "A."}}}`: "a: no default",
		`{"properties": {"a": {"default": 1}}}`:        "a: no description",
		`{"type": "object"}`:                           "no properties",
	} {
		if _, err := generate([]byte(schema)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", schema, err, want)
		}
	}
}
