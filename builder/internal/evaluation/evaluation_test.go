package evaluation

import (
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/builder/internal/sdctest"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
)

// TestGeneratedSpecIsCurrent: the spec of the vulnerabilities block, which
// the gate's and the scan provisioner's specs both point at, is the one
// packer-sdc makes now.
func TestGeneratedSpecIsCurrent(t *testing.T) {
	spec := sdctest.Spec(t, sdctest.Find(t), "evaluation.go", "evaluation", "Vulnerabilities")
	sdctest.Same(t, spec, "evaluation.hcl2spec.go", "go generate ./builder/internal/evaluation")
}

// TestVerdict: each way a report can stop a build gets its own reason, and
// a collector error outranks a failing check, as scan.ExitCode has it.
func TestVerdict(t *testing.T) {
	th := scan.Thresholds{FailOn: "high", FailOnSkip: "critical"}
	result := func(sev, status string) reports.Result {
		return reports.Result{ID: "GH-X-" + sev, Severity: sev, Status: status}
	}
	for _, tc := range []struct {
		name       string
		results    []reports.Result
		collectors map[string]reports.CollectorStatus
		want       string
	}{
		{"pass", []reports.Result{result("high", reports.StatusPass), result("medium", reports.StatusFail)}, nil, ""},
		{"fail", []reports.Result{result("high", reports.StatusFail)}, nil, "fails policy at or above high"},
		{"skip", []reports.Result{result("critical", reports.StatusSkip)}, nil, "could not be evaluated (fail_on_skip)"},
		{"error", []reports.Result{result("low", reports.StatusError)}, nil, "cannot be trusted"},
		{"collector", []reports.Result{result("high", reports.StatusFail)},
			map[string]reports.CollectorStatus{"ssh": {Status: "error", Reason: "bad sshd_config"}}, "cannot be trusted"},
	} {
		rep := &reports.Report{Results: tc.results, Collectors: tc.collectors}
		rep.Summarize()
		err := Verdict(rep, th)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want a pass", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
