package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/policy/compliance"
	"github.com/gpuhost/gpuhost/reports"
)

// goldenProfile judges the golden report's checks: one rule by a whole
// check, one by a check's findings about a subject, one nothing judges,
// a manual control and a tailored one.
const goldenProfile = `
name: golden
title: Golden profile
benchmark: {title: Golden Benchmark, version: v1}
xccdf:
  profile: xccdf_org.ssgproject.content_profile_golden
  rule_prefix: xccdf_org.ssgproject.content_rule_
  platform: "cpe:2.3:o:canonical:ubuntu_linux:22.04:*:*:*:*:*:*:*"
sections: {"1": First, "5": Fifth}
controls:
  - id: "1.1"
    title: "TLS <1.3> & \"friends\""
    level: 1
    rules:
      - xccdf: tls_min
        checks: [GH-TLS-001]
  - id: "1.2"
    title: Not judged yet
    level: 1
    rules:
      - xccdf: not_judged
  - id: "5.1"
    title: By hand
    level: 2
    manual: read the runbook
  - id: "5.2"
    title: Set aside
    level: 1
    rules:
      - xccdf: set_aside
        checks: [GH-SSH-001]
tailoring:
  - control: "5.2"
    reason: a GPU host needs it
`

func xccdfReport(t testing.TB) *reports.Report {
	t.Helper()
	rep := loadReport(t)
	p, err := compliance.Parse("golden", []byte(goldenProfile))
	if err != nil {
		t.Fatal(err)
	}
	rep.Compliance = p.Judge(rep.Results)
	return rep
}

// TestXCCDF: the golden XCCDF document, its rule results under the
// profile's rule ids, and a refusal for a report that judged no profile.
func TestXCCDF(t *testing.T) {
	rep := xccdfReport(t)
	got := rendered(t, mustLookup(t, "xccdf"), rep)
	testutil.Golden(t, filepath.Join("testdata", "golden", "report.xccdf"), got, *update)

	var doc struct {
		Results []struct {
			RuleResults []struct {
				IDRef  string `xml:"idref,attr"`
				Result string `xml:"result"`
			} `xml:"rule-result"`
		} `xml:"TestResult"`
	}
	if err := xml.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Results) != 1 {
		t.Fatalf("%d TestResults; want 1", len(doc.Results))
	}
	want := map[string]string{
		"xccdf_org.ssgproject.content_rule_not_judged": "notchecked",
		"xccdf_org.ssgproject.content_rule_set_aside":  "notselected",
	}
	for _, rr := range doc.Results[0].RuleResults {
		if w, ok := want[rr.IDRef]; ok && rr.Result != w {
			t.Errorf("%s: %s; want %s", rr.IDRef, rr.Result, w)
		}
		delete(want, rr.IDRef)
	}
	if len(want) > 0 {
		t.Errorf("rule results missing: %v", want)
	}

	rep.Compliance = nil
	var buf bytes.Buffer
	if err := mustLookup(t, "xccdf").Render(&buf, rep); !errors.Is(err, ErrNoCompliance) {
		t.Errorf("a report without a profile: %v; want ErrNoCompliance", err)
	}
}

// TestXCCDFPassesOpenSCAP holds the document to the tool SCAP users read
// it with: `oscap xccdf validate` (the XCCDF 1.2 schema) passes it and
// `oscap xccdf generate report` renders it, with two hosts in it.
func TestXCCDFPassesOpenSCAP(t *testing.T) {
	oscap, err := exec.LookPath("oscap")
	if err != nil {
		t.Skip("oscap is not installed; make deps installs openscap-scanner")
	}
	a, b := xccdfReport(t), xccdfReport(t)
	b.Target.Hostname = "gpu-b"
	b.Caveats = []string{"demo vulnerability DB: not for release gating"}
	var buf bytes.Buffer
	if err := mustLookup(t, "xccdf").(Merger).RenderAll(&buf, []*reports.Report{a, b}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "results.xccdf.xml")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(oscap, "xccdf", "validate", file).CombinedOutput()
	if err != nil {
		t.Fatalf("oscap xccdf validate: %v\n%s", err, out)
	}
	html, err := exec.Command(oscap, "xccdf", "generate", "report", file).Output()
	if err != nil {
		t.Fatalf("oscap xccdf generate report: %v", err)
	}
	if !strings.Contains(buf.String(), "<remark>Caveat: demo vulnerability DB: not for release gating</remark>") {
		t.Errorf("the second TestResult does not carry its caveat as a remark:\n%s", buf.String())
	}
	if !strings.Contains(string(html), "gpu-b") || !strings.Contains(string(html), "Golden profile") {
		t.Errorf("oscap's report names neither the second host nor the profile (%d bytes)", len(html))
	}
}

// FuzzXCCDF: whatever text a report carries, the document is well-formed
// XML.
func FuzzXCCDF(f *testing.F) {
	f.Add("msg <&>\x00\x1b", "title\"'", "5.2")
	f.Fuzz(func(t *testing.T, msg, title, id string) {
		rep := xccdfReport(t)
		rep.Compliance.Title = title
		rep.Compliance.Controls[0].Title = title
		rep.Compliance.Controls[0].ID = id
		rep.Compliance.Controls[0].Rules[0].Reason = msg
		rep.Target.Ref = msg
		var buf bytes.Buffer
		if err := mustLookup(t, "xccdf").Render(&buf, rep); err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(&buf)
		for {
			_, err := d.Token()
			if err != nil {
				if err.Error() == "EOF" {
					return
				}
				t.Fatalf("not well-formed XML: %v", err)
			}
		}
	})
}

// TestComplianceInEveryReader: the table, markdown and HTML formats lead
// with the profile's per-section totals and list the controls that
// failed, the profile's text escaped as each language needs.
func TestComplianceInEveryReader(t *testing.T) {
	rep := xccdfReport(t)
	for _, f := range []string{"table", "markdown", "html"} {
		out := string(rendered(t, mustLookup(t, f), rep))
		for _, want := range []string{"Compliance: Golden profile (Golden Benchmark v1)", "1 First", "5 Fifth", "1.1"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q", f, want)
			}
		}
		if f == "html" && strings.Contains(out, "<1.3>") {
			t.Errorf("html: a control's title is not escaped")
		}
	}
}
