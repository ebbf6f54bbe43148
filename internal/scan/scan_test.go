package scan

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/engine"
	"github.com/gpuhost/gpuhost/internal/waivers"
	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/reports"
)

func newScanner(t *testing.T, opts ...Option) *Scanner {
	t.Helper()
	src, err := engine.LoadFS(policies.FS, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(context.Background(), engine.WithSource(src))
	if err != nil {
		t.Fatal(err)
	}
	return New(e, opts...)
}

func loadDoc(t *testing.T) (*engine.Document, []byte) {
	t.Helper()
	data, err := os.ReadFile("testdata/hardened-facts.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := engine.ParseDocument(data, "hardened")
	if err != nil {
		t.Fatal(err)
	}
	return doc, data
}

func TestDocumentBuildsAReport(t *testing.T) {
	doc, data := loadDoc(t)
	rep, err := newScanner(t).Document(context.Background(), doc, data)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Schema != reports.Schema || rep.Target.Kind != "rootfs" || rep.Target.Hostname != "gpu-sample-hardened" {
		t.Errorf("header: %+v", rep.Target)
	}
	if rep.Summary.Total != len(rep.Results) || rep.Summary.Total == 0 {
		t.Errorf("summary %+v for %d results", rep.Summary, len(rep.Results))
	}
	if !strings.HasPrefix(rep.FactsDigest, "sha256:") || rep.PolicyDigest == "" || rep.ToolVersion == "" {
		t.Errorf("digests/version missing: %q %q %q", rep.FactsDigest, rep.PolicyDigest, rep.ToolVersion)
	}
	if len(rep.Collectors) == 0 {
		t.Error("collector statuses not carried into the report")
	}
}

func TestWaiverLeavesPassesAlone(t *testing.T) {
	doc, data := loadDoc(t)
	// A waiver only ever turns a failure into waived: a passing check
	// stays a pass, with no waiver attached.
	list, err := waivers.Parse([]byte("- id: GH-SSH-001\n  target: \"*\"\n  justification: j\n  approved_by: a\n  expires: 2099-01-01\n  ticket: SEC-1\n"), "w")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := newScanner(t, WithWaivers(list), WithClock(func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) })).Document(context.Background(), doc, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.ID == "GH-SSH-001" && (r.Status != reports.StatusPass || r.Waiver != nil) {
			t.Errorf("a passing check was touched by a waiver: %+v", r)
		}
	}
}

func TestExitCode(t *testing.T) {
	fail := func(sev string) reports.Result { return reports.Result{Severity: sev, Status: reports.StatusFail} }
	rep := func(rs ...reports.Result) *reports.Report { return &reports.Report{Results: rs} }
	cases := []struct {
		name   string
		reps   []*reports.Report
		failOn string
		want   int
	}{
		{"clean", []*reports.Report{rep(reports.Result{Severity: "high", Status: reports.StatusPass})}, "high", ExitPass},
		{"medium under high", []*reports.Report{rep(fail("medium"))}, "high", ExitPass},
		{"medium at medium", []*reports.Report{rep(fail("medium"))}, "medium", ExitFail},
		{"critical", []*reports.Report{rep(fail("critical"))}, "high", ExitFail},
		{"waived", []*reports.Report{rep(reports.Result{Severity: "critical", Status: reports.StatusWaived})}, "info", ExitPass},
		{"error beats fail", []*reports.Report{rep(fail("critical")), rep(reports.Result{Severity: "info", Status: reports.StatusError})}, "critical", ExitUntrusted},
		{"collector error", []*reports.Report{{Collectors: map[string]reports.CollectorStatus{"ssh": {Status: "error"}}}}, "high", ExitUntrusted},
	}
	for _, c := range cases {
		if got := ExitCode(c.reps, c.failOn); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}
