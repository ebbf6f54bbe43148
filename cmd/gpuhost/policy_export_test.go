package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// exportPack writes the embedded pack into a new directory and returns it.
func exportPack(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pack")
	if o := runCommand(t, (*app).policyExportCommand, dir); o.code != 0 {
		t.Fatalf("policy export: exit %d\n%s", o.code, o.stderr)
	}
	return dir
}

// The exported directory is the pack the binary ships, file for file: the
// same checks under the same digest, the domains' folders beside their
// collectors among them. A directory that holds anything is refused.
func TestPolicyExport(t *testing.T) {
	dir := exportPack(t)
	if _, err := os.Stat(filepath.Join(dir, "sb", "lockdown.rego")); err != nil {
		t.Errorf("the Secure Boot checks are not in the exported pack: %v", err)
	}
	policy := (*app).policyCommand
	digest := regexp.MustCompile(`policy digest (\S+)`)
	embedded, exported := runCommand(t, policy, "list"), runCommand(t, policy, "list", "--policy", dir)
	e, x := digest.FindStringSubmatch(embedded.stdout), digest.FindStringSubmatch(exported.stdout)
	if embedded.code != 0 || exported.code != 0 || e == nil || x == nil || e[1] != x[1] || embedded.stdout != exported.stdout {
		t.Errorf("policy list: the embedded pack (exit %d) and the exported one (exit %d) differ:\n%s\n%s", embedded.code, exported.code, embedded.stdout, exported.stdout)
	}
	o := runCommand(t, (*app).policyExportCommand, dir)
	if o.code != 2 || !strings.Contains(o.stderr, dir) || !strings.Contains(o.stderr, "not empty") {
		t.Errorf("export into a full directory: exit %d, want 2 naming it\n%s", o.code, o.stderr)
	}
}
