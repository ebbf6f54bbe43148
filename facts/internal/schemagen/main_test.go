package main

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite facts/schema.json")

// TestSchemaIsGenerated fails while facts/schema.json is not what
// go generate ./facts writes from the Go types as they are: a field added
// without regenerating, or the file edited by hand.
func TestSchemaIsGenerated(t *testing.T) {
	t.Chdir("../..")
	got, err := generate(".")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("schema.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("facts/schema.json is not what the Go types in facts/ generate: run go generate ./facts (or this test with -update)")
	}
}
