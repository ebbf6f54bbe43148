package system

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/facts"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite golden files")

// symlink marks a tree entry that is a symlink to the given target.
type symlink string

// writeTree creates files (string or []byte content), symlinks and empty
// directories (name ending in "/") under dir.
func writeTree(t testing.TB, dir string, tree map[string]any) {
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
		case symlink:
			err = os.Symlink(string(c), p)
		default:
			t.Fatalf("bad tree entry %s: %T", name, v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// newEnv opens dir as the scanned tree.
func newEnv(t testing.TB, dir string, live bool) *collector.Env {
	t.Helper()
	fsys, c, err := sysrootOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &collector.Env{
		FS:               fsys,
		Live:             live,
		Log:              slog.New(slog.NewTextHandler(io.Discard, nil)),
		ProbeTimeout:     2 * time.Second,
		ProbeConcurrency: 4,
		// A fake host has no kernel ruleset and no service manager of its
		// own; the test machine's must not leak into its facts.
		NetNS: noNetNS,
		UnitState: func(context.Context, string) (string, string) {
			return "unknown", "the fake host has no service manager"
		},
	}
}

// noNetNS is a namespace path that does not exist, so that a fake live host
// takes the path of a host whose kernel ruleset cannot be read.
const noNetNS = "/nonexistent/netns"

// collect runs the named collector (or all, in order, when names is empty)
// the way the orchestrator does, recording outcomes.
func collect(t testing.TB, env *collector.Env, f *facts.Facts, names ...string) {
	t.Helper()
	for _, c := range Collectors() {
		if len(names) > 0 && !contains(names, c.Name()) {
			continue
		}
		status, reason := collector.Classify(c.Collect(context.Background(), env, f))
		f.Record(c.Name(), status, reason)
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

func newFacts(kind string) *facts.Facts {
	return facts.New(kind, "test", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
}

// collectOne runs one collector and returns its raw error.
func collectOne(t testing.TB, env *collector.Env, f *facts.Facts, name string) error {
	t.Helper()
	for _, c := range Collectors() {
		if c.Name() == name {
			return c.Collect(context.Background(), env, f)
		}
	}
	t.Fatalf("no collector %q", name)
	return nil
}

// golden compares v, as indented JSON, with testdata/<name>.
func golden(t *testing.T, name string, v any) {
	t.Helper()
	testutil.GoldenJSON(t, filepath.Join("testdata", name), v, *update)
}

func wantStatus(t *testing.T, f *facts.Facts, name, status string) {
	t.Helper()
	got := f.Collectors[name]
	if got.Status != status {
		t.Errorf("collector %s: status %q (%s), want %q", name, got.Status, got.Reason, status)
	}
}

// fakeDMTables answers device-mapper table reads from tables, in the
// format `dmsetup table` prints, for fake sysfs trees that have no kernel
// behind them.
func fakeDMTables(t testing.TB, tables map[string]string) {
	t.Helper()
	old := dmTables
	dmTables = func(string) func(string) ([]dmTarget, string, error) {
		return func(name string) ([]dmTarget, string, error) {
			table, ok := tables[name]
			if !ok {
				return nil, "kernel", fmt.Errorf("no device-mapper device %s", name)
			}
			targets, err := parseDMSetupTable([]byte(table))
			return targets, "kernel", err
		}
	}
	t.Cleanup(func() { dmTables = old })
}
