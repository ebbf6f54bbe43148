package scan

import (
	"testing"

	"github.com/gpuhost/gpuhost/reports"
)

func hostReport(ref string, statuses ...string) *reports.Report {
	rep := &reports.Report{Target: reports.Target{Ref: ref}, PolicyDigest: "sha256:p"}
	for i, st := range statuses {
		rep.Results = append(rep.Results, reports.Result{ID: []string{"GH-A", "GH-B"}[i], Title: "t", Severity: []string{"high", "low"}[i], Status: st})
	}
	return rep
}

func TestFleetSummary(t *testing.T) {
	s := NewFleetSummary(Thresholds{FailOn: "high"})
	s.Add(hostReport("h1", reports.StatusFail, reports.StatusPass))
	s.Add(hostReport("h2", reports.StatusPass, reports.StatusFail))
	s.Add(hostReport("h3\x1b[31m\tx", reports.StatusFail, reports.StatusWaived))
	if s.Hosts != 3 || s.HostsFailing != 2 || s.HostsUntrusted != 0 || s.ExitCode() != ExitFail {
		t.Errorf("hosts %d failing %d untrusted %d exit %d", s.Hosts, s.HostsFailing, s.HostsUntrusted, s.ExitCode())
	}
	a, b := s.Rows()[0], s.Rows()[1]
	if a.ID != "GH-A" || a.Fail != 2 || a.Pass != 1 || len(a.Failing) != 2 || b.Fail != 1 || b.Waived != 1 || b.Pass != 1 {
		t.Errorf("rows: %+v %+v", a, b)
	}

	s.Add(hostReport("h4", reports.StatusError, reports.StatusPass))
	if s.HostsUntrusted != 1 || s.ExitCode() != ExitUntrusted {
		t.Errorf("an errored host: untrusted %d, exit %d", s.HostsUntrusted, s.ExitCode())
	}
	for range 10 {
		s.Add(hostReport("more", reports.StatusFail, reports.StatusPass))
	}
	if n := len(s.Checks[0].Failing); n != maxExamples {
		t.Errorf("%d failing hosts named, want at most %d", n, maxExamples)
	}
}
