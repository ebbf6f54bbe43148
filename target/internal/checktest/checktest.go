// Package checktest runs collectors in tests the way the loop does, into a
// facts document (Run, CollectOne, CollectDir), and holds the fixtures more
// than one domain's tests read. The trees and environments they run over
// are package collecttest's.
package checktest

import (
	"context"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/target/collector"
)

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

// CollectDir runs cs over dir as an offline rootfs, in the order given and
// without what they need, and returns the document and each collector's
// raw error: for tests of what a collector makes of its own files.
func CollectDir(t testing.TB, dir string, cs ...collector.Collector) (*facts.Facts, map[string]error) {
	t.Helper()
	env := &collect.Env{FS: collecttest.OpenFS(t, dir)}
	f := facts.New(facts.KindRootfs, dir, time.Unix(0, 0))
	errs := map[string]error{}
	for _, c := range cs {
		errs[c.Name()] = c.Collect(context.Background(), env, f)
	}
	return f, errs
}
