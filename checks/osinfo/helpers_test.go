package osinfo

import (
	"testing"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/domains"
	"github.com/gpuhost/gpuhost/checks/internal/checktest"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// all is what this package's tests run: the collectors of this package and the packages collector they need.
func all() []collector.Collector { return append(Collectors(), domains.Collectors()...) }

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

// parseOSRelease is what the os collector makes of one os-release file.
func parseOSRelease(data []byte) (*facts.OS, error) {
	vars, err := OSReleaseVars(data)
	if err != nil {
		return nil, err
	}
	return osFacts(vars), nil
}
