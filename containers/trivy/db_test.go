package trivy

import (
	"path/filepath"
	"testing"
)

// buildDB writes testdata/db/<name>.yaml as a trivy DB directory with
// WriteDB and returns the directory.
func buildDB(t *testing.T, name string) string {
	t.Helper()
	fx, err := ReadFixture(filepath.Join("testdata", "db", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteDB(dir, fx); err != nil {
		t.Fatal(err)
	}
	return dir
}
