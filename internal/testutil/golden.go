package testutil

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// GoldenJSON compares v, as indented JSON ending in a newline, with file,
// after replacing each old with its new in the text (a temporary root
// written as ROOT, say). With update it first rewrites file, creating its
// directory.
func GoldenJSON(t testing.TB, file string, v any, update bool, oldnew ...string) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	Golden(t, file, []byte(strings.NewReplacer(oldnew...).Replace(string(got))+"\n"), update)
}

// Golden compares got with file byte for byte. With update it first
// rewrites file, creating its directory.
func Golden(t testing.TB, file string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update after checking):\n%s", file, got)
	}
}
