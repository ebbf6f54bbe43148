package target

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/target/internal/checktest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// collect runs the named collectors of All() over env, each after what it
// needs, recording outcomes.
func gather(t testing.TB, env *collect.Env, f *facts.Facts, names ...string) {
	t.Helper()
	checktest.Run(t, env, f, All(), names...)
}

// collectOne runs the collector of All() called name alone and returns its
// raw error.
func collectOne(t testing.TB, env *collect.Env, f *facts.Facts, name string) error {
	t.Helper()
	return checktest.CollectOne(t, env, f, All(), name)
}

// golden compares v, as indented JSON, with testdata/<name>.
func golden(t *testing.T, name string, v any) {
	t.Helper()
	testutil.GoldenJSON(t, filepath.Join("testdata", name), v, *update)
}
