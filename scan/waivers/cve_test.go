package waivers

import (
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/reports"
)

const cveFile = `
- id: GH-SC-001
  cve: [CVE-2099-0001]
  target: "*"
  justification: openssl fix qualifies next sprint; the vulnerable API is unused
  approved_by: sec-team@example.com
  expires: 2026-12-31
  ticket: SEC-100
- id: GH-SC-001
  cve: [CVE-2099-0002]
  target: "*"
  justification: lapsed
  approved_by: alice
  expires: 2026-01-01
  ticket: SEC-101
`

func cveResult(cves ...string) []reports.Result {
	r := reports.Result{ID: CVECheck, Status: reports.StatusFail}
	for _, c := range cves {
		r.Messages = append(r.Messages, "openssl has "+c)
		r.Findings = append(r.Findings, reports.Finding{Message: "openssl has " + c, Subject: c})
	}
	return []reports.Result{r}
}

// TestCVEWaivers: a waiver with a cve list waives those findings of the
// CVE check, not the check: the result is waived only when every finding
// is, and an expired one leaves its finding failing and says so.
func TestCVEWaivers(t *testing.T) {
	list := parse(t, cveFile)
	target := reports.Target{Kind: "image", Ref: "/out/disk.qcow2"}

	rs := cveResult("CVE-2099-0001")
	ApplyTarget(rs, list, target, now)
	if rs[0].Status != reports.StatusWaived || rs[0].Waiver == nil || rs[0].Findings[0].Waiver == nil ||
		rs[0].Findings[0].Waiver.Ticket != "SEC-100" || strings.Join(rs[0].Waiver.CVE, ",") != "CVE-2099-0001" {
		t.Errorf("one waived CVE: %+v", rs[0])
	}

	rs = cveResult("CVE-2099-0001", "CVE-2099-0003")
	ApplyTarget(rs, list, target, now)
	if rs[0].Status != reports.StatusFail || rs[0].Findings[0].Waiver == nil || rs[0].Findings[1].Waiver != nil {
		t.Errorf("a new CVE beside a waived one must still fail: %+v", rs[0])
	}

	rs = cveResult("CVE-2099-0002")
	ApplyTarget(rs, list, target, now)
	if rs[0].Status != reports.StatusFail || rs[0].Findings[0].Waiver == nil || !rs[0].Findings[0].Waiver.Expired ||
		!strings.Contains(strings.Join(rs[0].Messages, "\n"), "CVE-2099-0002: waiver approved by alice (ticket SEC-101) expired on 2026-01-01") {
		t.Errorf("an expired CVE waiver: %+v", rs[0])
	}

	// A CVE waiver never waives another check.
	other := []reports.Result{{ID: "GH-SSH-001", Status: reports.StatusFail, Findings: []reports.Finding{{Message: "x", Subject: "CVE-2099-0001"}}}}
	ApplyTarget(other, list, target, now)
	if other[0].Status != reports.StatusFail {
		t.Errorf("GH-SSH-001 waived by a CVE waiver: %+v", other[0])
	}
}

func TestCVEWaiverValidation(t *testing.T) {
	_, err := Parse([]byte(`
- id: GH-SSH-001
  cve: [CVE-2099-0001]
  target: "*"
  justification: j
  approved_by: a
  expires: 2026-12-31
  ticket: T-1
- id: GH-SC-001
  cve: ["openssl", "CVE-99-1"]
  target: "*"
  justification: j
  approved_by: a
  expires: 2026-12-31
  ticket: T-2
`), "w.yaml")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"cve is only for GH-SC-001, the CVE check, not GH-SSH-001", `cve "openssl" is not a CVE or GHSA id`, `cve "CVE-99-1" is not a CVE or GHSA id`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if _, err := Parse([]byte("- id: GH-SC-001\n  cve: [GHSA-aaaa-bbbb-1111, CVE-2024-12345]\n  target: \"*\"\n  justification: j\n  approved_by: a\n  expires: 2026-12-31\n  ticket: T\n"), "w.yaml"); err == nil || !strings.Contains(err.Error(), "GHSA-aaaa") {
		t.Errorf("GHSA ids with letters outside its alphabet: err = %v", err)
	}
	if _, err := Parse([]byte("- id: GH-SC-001\n  cve: [GHSA-2m2m-3c4f-rv9q, CVE-2024-12345]\n  target: \"*\"\n  justification: j\n  approved_by: a\n  expires: 2026-12-31\n  ticket: T\n"), "w.yaml"); err != nil {
		t.Errorf("valid ids refused: %v", err)
	}
}
