package network

import (
	"testing"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/internal/checktest"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// all is what this package's tests run: the collectors of this package.
func all() []collector.Collector { return Collectors() }

// collect runs the named collectors (or all, when names is empty) the way
// the orchestrator does, recording outcomes.
func gather(t testing.TB, env *collect.Env, f *facts.Facts, names ...string) {
	t.Helper()
	checktest.Run(t, env, f, all(), names...)
}

// collectOne runs one collector alone and returns its raw error.
func collectOne(t testing.TB, env *collect.Env, f *facts.Facts, name string) error {
	t.Helper()
	return checktest.CollectOne(t, env, f, all(), name)
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
