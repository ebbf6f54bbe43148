package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/spf13/cobra/doc"
)

var update = flag.Bool("update", false, "rewrite docs/man from the command tree")

// manDir holds gpuhost(1) and a page per command, which the systemd units
// name in Documentation= and make install-man installs.
var manDir = filepath.Join("..", "..", "docs", "man")

// manHeader dates the pages by hand: a generation date would make every
// regeneration a diff although no command changed.
var manHeader = &doc.GenManHeader{
	Title:   "GPUHOST",
	Section: "1",
	Source:  "gpuhost",
	Manual:  "gpuhost manual",
	Date:    func() *time.Time { t := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC); return &t }(),
}

// TestManPages keeps docs/man equal to what cobra's doc package makes of
// the command tree; go test ./cmd/gpuhost -run TestManPages -update
// rewrites them.
func TestManPages(t *testing.T) {
	if !fullBuild {
		t.Skip("the man pages describe the full build; the lean one has fewer commands")
	}
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	root := a.rootCommand()
	root.DisableAutoGenTag = true
	dir := t.TempDir()
	if err := doc.GenManTree(root, manHeader, dir); err != nil {
		t.Fatal(err)
	}
	got, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	if *update {
		old, _ := filepath.Glob(filepath.Join(manDir, "*.1"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(manDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range got {
			b, _ := os.ReadFile(f)
			if err := os.WriteFile(filepath.Join(manDir, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, _ := filepath.Glob(filepath.Join(manDir, "*.1"))
	names := func(files []string) []string {
		out := make([]string, len(files))
		for i, f := range files {
			out[i] = filepath.Base(f)
		}
		return out
	}
	if !slices.Equal(names(got), names(want)) {
		t.Fatalf("docs/man has %v, the command tree makes %v; run go test ./cmd/gpuhost -run TestManPages -update", names(want), names(got))
	}
	for _, f := range got {
		a, _ := os.ReadFile(f)
		b, _ := os.ReadFile(filepath.Join(manDir, filepath.Base(f)))
		if !bytes.Equal(a, b) {
			t.Errorf("docs/man/%s is stale; run go test ./cmd/gpuhost -run TestManPages -update", filepath.Base(f))
		}
	}
	if !slices.Contains(names(got), "gpuhost.1") {
		t.Error("no gpuhost(1), which the systemd units name")
	}
}
