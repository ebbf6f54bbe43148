package testutil

import (
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
	text := strings.NewReplacer(oldnew...).Replace(string(got)) + "\n"
	if update {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if text != string(want) {
		t.Errorf("%s differs (run with -update after checking):\n%s", file, text)
	}
}
