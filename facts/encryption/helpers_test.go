package encryption

import (
	"context"
	"flag"
	"fmt"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite golden files")

// mustCollect runs Collect over env and fails the test unless it
// collected.
func mustCollect(t testing.TB, env *collect.Env) *facts.Encryption {
	t.Helper()
	e, err := Collect(context.Background(), env)
	if err != nil || e == nil {
		t.Fatalf("Collect: %v", err)
	}
	return e
}

// golden compares v, as indented JSON, with testdata/<name>.
func golden(t *testing.T, name string, v any) {
	t.Helper()
	testutil.GoldenJSON(t, filepath.Join("testdata", name), v, *update)
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

// budgetOf is a trial budget with per-slot limits lim and nothing else to
// run out of: tests of what a slot costs are not cut short by the target's
// budget or a deadline.
func budgetOf(lim trialLimits) *trialBudget {
	lim.TotalArgonWork, lim.TotalPBKDF2Blocks = math.MaxUint64, math.MaxUint64
	return &trialBudget{lim: lim, ctx: context.Background(), until: time.Now().Add(time.Hour), spend: time.Hour,
		argonLeft: lim.TotalArgonWork, pbkdf2Left: lim.TotalPBKDF2Blocks}
}
