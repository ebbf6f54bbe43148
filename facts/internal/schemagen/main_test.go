package main

import (
	"flag"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite facts/schema.json, as go generate ./facts does")

// TestSchemaIsGenerated fails while facts/schema.json is not what
// go generate ./facts writes from the Go types as they are: a field added
// without regenerating, or the file edited by hand.
func TestSchemaIsGenerated(t *testing.T) {
	t.Chdir("../..")
	got, err := generate(".")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "schema.json", got, *update)
}
