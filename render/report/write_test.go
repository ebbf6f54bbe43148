package report

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpuhost/gpuhost/reports"
)

// failingRenderer writes part of a document, then fails: the shape of a
// renderer hitting a bad template or a full disk midway.
type failingRenderer struct{}

func (failingRenderer) Format() string { return "broken" }

func (failingRenderer) Ext() string { return "broken" }

func (failingRenderer) Render(w io.Writer, _ *reports.Report) error {
	if _, err := io.WriteString(w, strings.Repeat("partial ", 10000)); err != nil {
		return err
	}
	return errors.New("template exploded")
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "scan.json")
	rep := loadReport(t)
	if err := WriteFile(path, mustLookup(t, "json"), rep); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := rendered(t, mustLookup(t, "json"), rep); string(got) != string(want) {
		t.Error("file differs from the rendered report")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	assertOnly(t, dir, "scan.json")
}

func TestWriteFileFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "scan.sarif")
	if err := os.WriteFile(path, []byte("previous report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(path, failingRenderer{}, loadReport(t))
	if err == nil || !strings.Contains(err.Error(), "template exploded") || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want the render error naming %s", err, path)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "previous report\n" {
		t.Errorf("old report replaced by %q...", got[:min(len(got), 40)])
	}
	assertOnly(t, dir, "scan.sarif")
}

func TestWriteFileFailureLeavesNothingNew(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFile(filepath.Join(dir, "new.html"), failingRenderer{}, &reports.Report{}); err == nil {
		t.Fatal("want an error")
	}
	assertOnly(t, dir)
}

func TestWriteFileBadPaths(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{filepath.Join(dir, "missing", "x.json"), dir + string(os.PathSeparator)} {
		if err := WriteFile(p, mustLookup(t, "json"), &reports.Report{}); err == nil {
			t.Errorf("WriteFile(%q) = nil, want an error", p)
		}
	}
	if err := WriteFile(filepath.Join(dir, "x"), nil, &reports.Report{}); err == nil {
		t.Error("nil renderer accepted")
	}
	assertOnly(t, dir)
}

// assertOnly fails unless dir holds exactly the named entries: no
// temporary files left behind.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("directory holds %v, want %v", got, names)
	}
}

func TestParseReportSpec(t *testing.T) {
	f, p, err := ParseReportSpec("sarif=out/scan.sarif")
	if err != nil || f != "sarif" || p != "out/scan.sarif" {
		t.Errorf("= %q, %q, %v", f, p, err)
	}
	f, p, err = ParseReportSpec("html=a=b.html")
	if err != nil || f != "html" || p != "a=b.html" {
		t.Errorf("path with '=': %q, %q, %v", f, p, err)
	}
	for _, bad := range []struct{ spec, want string }{
		{"sarif", "want FORMAT=PATH"},
		{"=x.json", "want FORMAT=PATH"},
		{"json=", "want FORMAT=PATH"},
		{"pdf=x.pdf", `unknown report format "pdf" (want one of github, html, json, junit, markdown, sarif, table, tap, xccdf)`},
	} {
		_, _, err := ParseReportSpec(bad.spec)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseReportSpec(%q) = %v, want an error containing %q", bad.spec, err, bad.want)
		}
	}
}

// A report never replaces what is not a regular file at its path: a device
// node, a named pipe or a link stay as they were.
func TestWriteFileRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), link); err != nil {
		t.Fatal(err)
	}
	r, err := Lookup("json")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, link, dir + "/"} {
		err := WriteFile(path, r, loadReport(t))
		if err == nil {
			t.Errorf("%s: written", path)
			continue
		}
		if path != dir+"/" && !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v", path, err)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the pipe is gone or replaced: %v %v", fi, err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode().Type() != os.ModeSymlink {
		t.Errorf("the link is gone or replaced: %v %v", fi, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
