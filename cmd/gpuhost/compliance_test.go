package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/reports"
)

// TestComplianceFlag: --compliance adds the profile's per-control block to
// the report, the table leads with its section totals, the exit code stays
// the checks', and a profile the pack lacks exits 2 naming the nearest.
func TestComplianceFlag(t *testing.T) {
	weak := filepath.Join("testdata", "rootfs-weak")
	o := gpuhost(t, "", "scan", "rootfs", weak, "--compliance", "cis-ubuntu-22.04-l1-server", "--format", "json")
	if o.code != 1 {
		t.Fatalf("exit %d; want 1, the weak tree's checks fail\n%s", o.code, o.stderr)
	}
	rep := jsonReport(t, o)
	c := rep.Compliance
	if c == nil {
		t.Fatal("the report has no compliance block")
	}
	if c.Profile != "cis-ubuntu-22.04-l1-server" || c.XCCDFProfile != "xccdf_org.ssgproject.content_profile_cis_level1_server" {
		t.Errorf("profile %q, xccdf profile %q", c.Profile, c.XCCDFProfile)
	}
	var sshRoot *reports.Control
	for i := range c.Controls {
		if c.Controls[i].ID == "5.2.9" {
			sshRoot = &c.Controls[i]
		}
	}
	if sshRoot == nil || sshRoot.Status != reports.ControlFail || len(sshRoot.Findings) == 0 {
		t.Errorf("control 5.2.9 (sshd root login) on the weak tree: %+v; want fail with the check's findings", sshRoot)
	}
	total := 0
	for _, n := range c.Summary {
		total += n
	}
	if total != len(c.Controls) || len(c.Sections) == 0 {
		t.Errorf("summary %v over %d controls, %d sections", c.Summary, len(c.Controls), len(c.Sections))
	}

	table := gpuhost(t, "", "scan", "rootfs", weak, "--compliance", "cis-ubuntu-22.04-l1-server")
	for _, want := range []string{"Compliance: CIS Ubuntu Linux 22.04 LTS, Level 1 - Server", "5 Access, authentication and authorization", "5.2.9 sshd refuses root logins [fail]"} {
		if !strings.Contains(table.stdout, want) {
			t.Errorf("the table does not say %q:\n%s", want, table.stdout)
		}
	}

	bad := gpuhost(t, "", "scan", "rootfs", weak, "--compliance", "cis-ubuntu-22.04-l1-servr")
	if bad.code != 2 || !strings.Contains(bad.stderr, `did you mean "cis-ubuntu-22.04-l1-server"`) {
		t.Errorf("an unknown profile: exit %d, %q; want 2 naming the nearest", bad.code, bad.stderr)
	}

	// The tailored profile sets its controls aside with their reasons, fails
	// a tailored control whose compensating checks fail (the weak tree's
	// firewall), and still fails the controls it keeps.
	controls := func(tree string) map[string]reports.Control {
		rep := jsonReport(t, gpuhost(t, "", "scan", "rootfs", tree, "--compliance", "gpu-container-host", "--format", "json", "--fail-on", "none"))
		m := map[string]reports.Control{}
		for _, c := range rep.Compliance.Controls {
			m[c.ID] = c
		}
		return m
	}
	w, h := controls(weak), controls(filepath.Join("testdata", "rootfs-hardened"))
	if w["3.2.2"].Status != reports.ControlFail || !strings.Contains(w["3.2.2"].Reason, "compensating") {
		t.Errorf("3.2.2 on the weak tree, whose firewall fails the compensating checks: %s (%s)", w["3.2.2"].Status, w["3.2.2"].Reason)
	}
	if w["5.2.9"].Status != reports.ControlFail {
		t.Errorf("5.2.9 (sshd root login) on the weak tree: %s; want fail", w["5.2.9"].Status)
	}
	for _, id := range []string{"3.2.2", "2.2.2"} {
		if h[id].Status != reports.ControlTailored || h[id].Reason == "" {
			t.Errorf("%s on the hardened tree: %s (%q); want tailored with the reason", id, h[id].Status, h[id].Reason)
		}
	}

	list := gpuhost(t, "", "compliance", "list")
	if list.code != 0 || !strings.Contains(list.stdout, "cis-ubuntu-22.04-l2-server") {
		t.Errorf("compliance list: exit %d\n%s%s", list.code, list.stdout, list.stderr)
	}
}
