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

// At debug level a collecting scan says how long each phase took, the
// collectors one by one between them: a selftest boot keeps this log as
// scan.err, to tell a slow guest's scan apart by phase.
func TestScanLogsEachPhaseAtDebug(t *testing.T) {
	o := gpuhost(t, "", "scan", "rootfs", hardened, "--params", params, "--format", "json", "--log-level", "debug")
	if o.code != 0 && o.code != 1 {
		t.Fatalf("exit %d\nstderr: %s", o.code, o.stderr)
	}
	last := -1
	for _, phase := range []string{`msg="policies compiled" took=`, `msg="collector done" collector=`, `msg="facts collected" took=`, `msg="checks evaluated" took=`} {
		i := strings.Index(o.stderr, phase)
		if i < 0 {
			t.Fatalf("no %s in the debug log:\n%s", phase, o.stderr)
		}
		if i < last {
			t.Errorf("%s comes before the phase it follows:\n%s", phase, o.stderr)
		}
		last = i
	}
}
