package waivers

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/reports"
)

const file = `
- id: GH-SSH-001
  target: "gpu-node-*"
  justification: bastion needs root for break-glass
  approved_by: sec-team@example.com
  expires: 2026-12-31
  ticket: SEC-42
- id: GH-TLS-002
  target: "*"
  justification: legacy client until migration
  approved_by: alice
  expires: 2026-01-15
`

func results() []reports.Result {
	return []reports.Result{
		{ID: "GH-SSH-001", Status: reports.StatusFail, Messages: []string{"root login"}},
		{ID: "GH-TLS-002", Status: reports.StatusFail, Messages: []string{"TLSv1.2"}},
		{ID: "GH-ENC-001", Status: reports.StatusFail},
		{ID: "GH-SSH-001", Status: reports.StatusError},
	}
}

func TestApply(t *testing.T) {
	list, err := Parse([]byte(file), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	rs := results()
	Apply(rs, list, "/var/lib/images/x.qcow2", "gpu-node-7", now)

	if rs[0].Status != reports.StatusWaived || rs[0].Waiver == nil || rs[0].Waiver.ApprovedBy != "sec-team@example.com" || rs[0].Waiver.Ticket != "SEC-42" {
		t.Errorf("matching waiver: got %+v", rs[0])
	}
	if rs[1].Status != reports.StatusFail || rs[1].Waiver == nil || !rs[1].Waiver.Expired ||
		!strings.Contains(strings.Join(rs[1].Messages, " "), "expired on 2026-01-15") {
		t.Errorf("expired waiver must not waive and must say so: got %+v", rs[1])
	}
	if rs[2].Status != reports.StatusFail || rs[2].Waiver != nil {
		t.Errorf("unwaived check changed: %+v", rs[2])
	}
	if rs[3].Status != reports.StatusError {
		t.Errorf("an error must never be waived: %+v", rs[3])
	}

	rs = results()
	Apply(rs, list, "/img", "other-host", now)
	if rs[0].Status != reports.StatusFail {
		t.Errorf("waiver for gpu-node-* applied to other-host")
	}
}

func TestExpiryIsInclusiveOfTheDay(t *testing.T) {
	list, err := Parse([]byte(file), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w := list[0]
	if w.Expired(time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC)) {
		t.Error("expired during its last day")
	}
	if !w.Expired(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Error("still valid the day after")
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	bad := `
- id: GH-SSH-001
  target: "["
  expires: tomorrow
- id: ""
  target: "*"
  justification: j
  approved_by: a
  expires: 2027-01-01
`
	_, err := Parse([]byte(bad), "w.yaml")
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"w.yaml", "justification is required", "approved_by is required",
		"not a date", "not a valid glob", "entry 2: id is required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := Parse([]byte("- id: X\n  colour: red\n"), "w.yaml"); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("unknown field: got %v", err)
	}
	if _, err := Parse([]byte("id: X\n"), "w.yaml"); err == nil {
		t.Error("a mapping at the top level must be refused")
	}
}
