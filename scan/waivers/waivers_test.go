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
  ticket: SEC-7
`

func results() []reports.Result {
	return []reports.Result{
		{ID: "GH-SSH-001", Status: reports.StatusFail, Messages: []string{"root login"}},
		{ID: "GH-TLS-002", Status: reports.StatusFail, Messages: []string{"TLSv1.2"}},
		{ID: "GH-ENC-001", Status: reports.StatusFail},
		{ID: "GH-SSH-001", Status: reports.StatusError},
	}
}

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func parse(t *testing.T, text string) []Waiver {
	t.Helper()
	list, err := Parse([]byte(text), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func TestApply(t *testing.T) {
	list := parse(t, file)
	rs := results()
	ApplyTarget(rs, list, reports.Target{Kind: "host", Ref: "/var/lib/images/x.qcow2", Hostname: "gpu-node-7"}, now)

	if rs[0].Status != reports.StatusWaived || rs[0].Waiver == nil || rs[0].Waiver.ApprovedBy != "sec-team@example.com" || rs[0].Waiver.Ticket != "SEC-42" {
		t.Errorf("matching waiver: got %+v", rs[0])
	}
	if rs[1].Status != reports.StatusFail || rs[1].Waiver == nil || !rs[1].Waiver.Expired ||
		!strings.Contains(strings.Join(rs[1].Messages, " "), "(ticket SEC-7) expired on 2026-01-15") {
		t.Errorf("expired waiver must not waive and must say so: got %+v", rs[1])
	}
	if rs[2].Status != reports.StatusFail || rs[2].Waiver != nil {
		t.Errorf("unwaived check changed: %+v", rs[2])
	}
	if rs[3].Status != reports.StatusError {
		t.Errorf("an error must never be waived: %+v", rs[3])
	}

	rs = results()
	ApplyTarget(rs, list, reports.Target{Ref: "/img", Hostname: "other-host"}, now)
	if rs[0].Status != reports.StatusFail {
		t.Errorf("waiver for gpu-node-* applied to other-host")
	}
}

func TestScope(t *testing.T) {
	list := parse(t, `
- id: GH-SSH-001
  target: "*"
  justification: j
  approved_by: a
  expires: 2099-01-01
  ticket: T-1
  scope:
    kinds: [host, image]
    hosts: ["gpu-a*", "gpu-b?"]
`)
	if s := list[0].Scope; s == nil || len(s.Kinds) != 2 || len(s.Hosts) != 2 {
		t.Fatalf("scope not parsed: %+v", list[0].Scope)
	}
	for _, c := range []struct {
		target reports.Target
		want   bool
	}{
		{reports.Target{Kind: "host", Hostname: "gpu-a17"}, true},
		{reports.Target{Kind: "image", Ref: "x.qcow2", Hostname: "gpu-b1"}, true},
		{reports.Target{Kind: "host", Hostname: "gpu-b12"}, false},
		{reports.Target{Kind: "rootfs", Hostname: "gpu-a17"}, false},
		{reports.Target{Kind: "host", Hostname: "cpu-a1"}, false},
		{reports.Target{Kind: "host"}, false},
		{reports.Target{Hostname: "gpu-a17"}, false},
	} {
		if got := list[0].Matches(c.target); got != c.want {
			t.Errorf("Matches(%+v) = %v, want %v", c.target, got, c.want)
		}
		rs := results()
		ApplyTarget(rs, list, c.target, now)
		if waived := rs[0].Status == reports.StatusWaived; waived != c.want {
			t.Errorf("ApplyTarget(%+v): waived %v, want %v", c.target, waived, c.want)
		}
		if c.want && (rs[0].Waiver.Scope == nil || rs[0].Waiver.Scope.Hosts[0] != "gpu-a*") {
			t.Errorf("the report's waiver lacks the scope: %+v", rs[0].Waiver)
		}
	}

	kindOnly := parse(t, "- {id: X, target: \"*\", justification: j, approved_by: a, expires: 2099-01-01, ticket: T, scope: {kinds: [rootfs]}}\n")
	if !kindOnly[0].Matches(reports.Target{Kind: "rootfs", Ref: "/srv/rootfs"}) {
		t.Error("a kind-only scope needs no hostname")
	}
	if kindOnly[0].Matches(reports.Target{Kind: "oci", Ref: "/srv/rootfs"}) {
		t.Error("a kind-only scope matched another kind")
	}
}

func TestExpiryIsInclusiveOfTheDay(t *testing.T) {
	w := parse(t, file)[0]
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
  ticket: T-1
- id: GH-TLS-001
  target: "*"
  justification: j
  approved_by: a
  expires: 2027-01-01
  ticket: T-2
  scope: {kinds: [vm], hosts: ["[", ""]}
- id: GH-TLS-002
  target: "*"
  justification: j
  approved_by: a
  expires: 2027-01-01
  ticket: T-3
  scope: {}
`
	_, err := Parse([]byte(bad), "w.yaml")
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"w.yaml", "justification is required", "approved_by is required",
		"entry 1 (GH-SSH-001): ticket is required", "not a date", "not a valid glob", "entry 2: id is required",
		`scope kind "vm" is not one of`, `scope host "[" is not a valid glob`, `scope host "" is not a valid glob`,
		"entry 4 (GH-TLS-002): scope is empty"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := Parse([]byte("- id: X\n  colour: red\n"), "w.yaml"); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("unknown field: got %v", err)
	}
	if _, err := Parse([]byte("- id: X\n  scope: {regions: [eu]}\n"), "w.yaml"); err == nil || !strings.Contains(err.Error(), "regions") {
		t.Errorf("unknown scope field: got %v", err)
	}
	if _, err := Parse([]byte("id: X\n"), "w.yaml"); err == nil {
		t.Error("a mapping at the top level must be refused")
	}
	if list, err := Parse(nil, "w.yaml"); err != nil || len(list) != 0 {
		t.Errorf("an empty file is no waivers: %v, %v", list, err)
	}
}

func TestParseBounds(t *testing.T) {
	var b strings.Builder
	for range maxEntries + 1 {
		b.WriteString("- {}\n")
	}
	if _, err := Parse([]byte(b.String()), "w.yaml"); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("%d entries: got %v", maxEntries+1, err)
	}
	b.Reset()
	b.WriteString("- {id: X, target: \"*\", justification: j, approved_by: a, expires: 2099-01-01, ticket: T, scope: {hosts: [")
	for i := range maxScopeItems + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("h")
	}
	b.WriteString("]}}\n")
	if _, err := Parse([]byte(b.String()), "w.yaml"); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("%d hosts: got %v", maxScopeItems+1, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(file))
	f.Add([]byte("- {id: X, target: \"*\", justification: j, approved_by: a, expires: 2099-01-01, ticket: T, scope: {kinds: [host], hosts: [\"g*\"]}}\n"))
	f.Add([]byte("- id: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := Parse(data, "fuzz.yaml")
		if err != nil {
			return
		}
		// Whatever loads must apply without trouble, and never waive an
		// error or turn a pass into anything else.
		rs := []reports.Result{{ID: "X", Status: reports.StatusError}, {ID: "X", Status: reports.StatusPass}}
		for _, w := range list {
			rs = append(rs, reports.Result{ID: w.ID, Status: reports.StatusFail})
		}
		ApplyTarget(rs, list, reports.Target{Kind: "host", Ref: "/r", Hostname: "h"}, now)
		if rs[0].Status != reports.StatusError || rs[1].Status != reports.StatusPass {
			t.Fatalf("statuses changed: %+v", rs[:2])
		}
		for _, w := range list {
			if w.Ticket == "" || w.ApprovedBy == "" {
				t.Fatalf("loaded an unaccountable waiver: %+v", w)
			}
		}
	})
}
