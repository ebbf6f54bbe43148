package tls

import (
	"testing"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/internal/checktest"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// all is what this package's tests run: the collectors of this package.
func all() []collector.Collector { return Collectors() }

// collectOne runs one collector alone and returns its raw error.
func collectOne(t testing.TB, env *collect.Env, f *facts.Facts, name string) error {
	t.Helper()
	return checktest.CollectOne(t, env, f, all(), name)
}
