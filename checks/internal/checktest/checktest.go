// Package checktest is what the collectors' tests share: fake trees written
// from maps (files, symlinks, directories), an environment over one that
// keeps the test machine's kernel and service manager out of its facts,
// and running collectors the way the orchestrator does.
package checktest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
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

// NewFacts is an empty document of the given target kind, stamped at a
// fixed time so that golden files hold still.
func NewFacts(kind string) *facts.Facts {
	return facts.New(kind, "test", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
}

// Run runs the collectors of cs that names names (all of them when names is
// empty) the way the orchestrator does: each after what it needs, recording
// outcomes. The named collectors must include what they need.
func Run(t testing.TB, env *collect.Env, f *facts.Facts, cs []collector.Collector, names ...string) {
	t.Helper()
	var picked []collector.Collector
	for _, c := range cs {
		if len(names) == 0 || contains(names, c.Name()) {
			picked = append(picked, c)
		}
	}
	if err := collector.Run(context.Background(), env, f, picked); err != nil {
		t.Fatal(err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// CollectOne runs the collector of cs called name alone, over whatever f
// already holds, and returns its raw error.
func CollectOne(t testing.TB, env *collect.Env, f *facts.Facts, cs []collector.Collector, name string) error {
	t.Helper()
	for _, c := range cs {
		if c.Name() == name {
			return c.Collect(context.Background(), env, f)
		}
	}
	t.Fatalf("no collector %q", name)
	return nil
}

// WantStatus fails the test unless the collector called name ended with
// status.
func WantStatus(t *testing.T, f *facts.Facts, name, status string) {
	t.Helper()
	got := f.Collectors[name]
	if got.Status != status {
		t.Errorf("collector %s: status %q (%s), want %q", name, got.Status, got.Reason, status)
	}
}

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

// CollectDir runs cs over dir as an offline rootfs, in the order given and
// without what they need, and returns the document and each collector's
// raw error: for tests of what a collector makes of its own files.
func CollectDir(t testing.TB, dir string, cs ...collector.Collector) (*facts.Facts, map[string]error) {
	t.Helper()
	env := &collect.Env{FS: OpenFS(t, dir)}
	f := facts.New(facts.KindRootfs, dir, time.Unix(0, 0))
	errs := map[string]error{}
	for _, c := range cs {
		errs[c.Name()] = c.Collect(context.Background(), env, f)
	}
	return f, errs
}

// Status is the status a collector's error gives it.
func Status(err error) string {
	s, _ := collect.Classify(err)
	return s
}
