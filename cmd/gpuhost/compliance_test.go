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

	list := gpuhost(t, "", "compliance", "list")
	if list.code != 0 || !strings.Contains(list.stdout, "cis-ubuntu-22.04-l2-server") {
		t.Errorf("compliance list: exit %d\n%s%s", list.code, list.stdout, list.stderr)
	}
}
