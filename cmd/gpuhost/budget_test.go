package main

import (
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/reports"
)

// --max-memory reaches the collection: a ceiling below what the scanner
// itself holds stops it before the first collector, and the scan is not
// trusted (exit 2) with every check that needs a collector in error.
func TestScanStopsAtTheMemoryCeiling(t *testing.T) {
	o := gpuhost(t, "", "scan", "rootfs", hardened, "--params", params, "--format", "json", "--max-memory", "1")
	if o.code != 2 {
		t.Fatalf("exit %d, want 2\nstderr: %s", o.code, o.stderr)
	}
	if !strings.Contains(o.stderr, "memory ceiling (1 MiB) was reached") {
		t.Errorf("stderr does not name the ceiling:\n%s", o.stderr)
	}
	rep := jsonReport(t, o)
	for _, r := range rep.Results {
		if r.Status == reports.StatusPass {
			t.Errorf("%s passed under a ceiling no collector could run within", r.ID)
		}
	}
}
