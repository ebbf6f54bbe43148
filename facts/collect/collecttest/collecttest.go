// Package collecttest is what collectors' tests share that knows nothing of
// the facts document: fake trees written from maps (files, symlinks,
// directories) and an environment over one that keeps the test machine's
// kernel and service manager out of its facts. A domain's own tests use
// it beside the domain's types; package checktest adds running collectors
// into a document the way the loop does.
package collecttest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// Symlink marks a tree entry that is a symlink to the given target.
type Symlink string

// WriteTree creates files (string or []byte content), symlinks and empty
// directories (name ending in "/") under dir.
func WriteTree(t testing.TB, dir string, tree map[string]any) {
	t.Helper()
	for name, v := range tree {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch c := v.(type) {
		case string:
			err = os.WriteFile(p, []byte(c), 0o644)
		case []byte:
			err = os.WriteFile(p, c, 0o644)
		case Symlink:
			err = os.Symlink(string(c), p)
		default:
			t.Fatalf("bad tree entry %s: %T", name, v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// NewEnv opens dir as the scanned tree.
func NewEnv(t testing.TB, dir string, live bool) *collect.Env {
	t.Helper()
	fsys, c, err := sysroot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &collect.Env{
		FS:               fsys,
		Live:             live,
		Log:              slog.New(slog.NewTextHandler(io.Discard, nil)),
		ProbeTimeout:     2 * time.Second,
		ProbeConcurrency: 4,
		// A fake host has no kernel ruleset and no service manager of its
		// own; the test machine's must not leak into its facts.
		NetNS: NoNetNS,
		UnitState: func(context.Context, string) (string, string) {
			return "unknown", "the fake host has no service manager"
		},
	}
}

// NoNetNS is a namespace path that does not exist, so that a fake live host
// takes the path of a host whose kernel ruleset cannot be read.
const NoNetNS = "/nonexistent/netns"

// TempTree writes files (root-relative names, a leading "/" allowed) into a
// new temporary directory and returns it.
func TempTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(name, "/")))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// OpenFS opens dir as a scanned tree, closed when the test ends.
func OpenFS(t testing.TB, dir string) sysroot.FS {
	t.Helper()
	fsys, closer, err := sysroot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closer.Close() })
	return fsys
}

// TempTreeOf is WriteTree into a new temporary directory, which it returns.
func TempTreeOf(t testing.TB, tree map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	WriteTree(t, dir, tree)
	return dir
}

// Status is the status a collector's error gives it.
func Status(err error) string {
	s, _ := collect.Classify(err)
	return s
}

// GoldenTree compares v, as indented JSON, with testdata/golden/NAME.json,
// the scanned tree's directory written as ROOT so that the file holds
// still wherever the test runs; update rewrites it.
func GoldenTree(t *testing.T, name, root string, v any, update bool) {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	testutil.GoldenJSON(t, filepath.Join("testdata", "golden", name+".json"), v, update, abs, "ROOT")
}
