package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func waiverFile(t *testing.T, entries ...[2]string) string {
	t.Helper()
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "- id: %s\n  target: \"*\"\n  justification: lab image\n  approved_by: security@example.com\n  expires: %s\n", e[0], e[1])
	}
	file := filepath.Join(t.TempDir(), "waivers.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func inDays(n int) string { return time.Now().UTC().AddDate(0, 0, n).Format(time.DateOnly) }

func TestWaiversCheck(t *testing.T) {
	build := (*app).waiversCommand

	current := waiverFile(t, [2]string{"GH-SSH-002", inDays(365)})
	if o := runCommand(t, build, "check", current); o.code != 0 || !strings.Contains(o.stdout, "0 expired, 0 for unknown checks") {
		t.Errorf("a current waiver: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}

	soon := waiverFile(t, [2]string{"GH-SSH-002", inDays(5)})
	o := runCommand(t, build, "check", soon)
	if o.code != 0 || !strings.Contains(o.stdout, "expiring") {
		t.Errorf("expiring soon is a warning: exit %d, want 0 and a warning\n%s", o.code, o.stdout)
	}
	if o := runCommand(t, build, "check", soon, "--strict"); o.code != 1 {
		t.Errorf("--strict with a waiver expiring soon: exit %d, want 1", o.code)
	}
	if o := runCommand(t, build, "check", soon, "--within", "3"); o.code != 0 || !strings.Contains(o.stdout, "0 expiring within 3 days") {
		t.Errorf("--within 3 still warns about a waiver 5 days out:\n%s", o.stdout)
	}
	if o := runCommand(t, build, "check", current, "--as-of", inDays(400)); o.code != 1 || !strings.Contains(o.stdout, "expired") {
		t.Errorf("--as-of past the expiry: exit %d, want 1\n%s", o.code, o.stdout)
	}

	bad := waiverFile(t, [2]string{"GH-SSH-002", "2020-01-01"}, [2]string{"GH-NOPE-001", inDays(100)}, [2]string{"GH-TLS-001", inDays(200)})
	o = runCommand(t, build, "check", bad)
	if o.code != 1 {
		t.Fatalf("expired and unknown: exit %d, want 1\n%s%s", o.code, o.stdout, o.stderr)
	}
	for _, want := range []string{"expired", "GH-SSH-002", "unknown-check", "GH-NOPE-001", "1 expired, 1 for unknown checks"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, o.stdout)
		}
	}
	if strings.Contains(o.stdout, "GH-TLS-001") {
		t.Errorf("a current waiver is listed as a problem:\n%s", o.stdout)
	}
}

func TestWaiversCheckWithPack(t *testing.T) {
	// A pack given with --policy replaces the default: ids only in the
	// default pack are then unknown.
	dir := t.TempDir()
	rego := `# METADATA
# title: Example
# custom:
#   id: EX-001
#   severity: low
#   remediation: none
#   targets: [rootfs]
package gpuhost.example.one

deny contains "x" if input.never
`
	if err := os.WriteFile(filepath.Join(dir, "one.rego"), []byte(rego), 0o644); err != nil {
		t.Fatal(err)
	}
	file := waiverFile(t, [2]string{"EX-001", inDays(90)}, [2]string{"GH-SSH-002", inDays(90)})
	o := runCommand(t, (*app).waiversCommand, "check", file, "--policy", dir)
	if o.code != 1 || !strings.Contains(o.stdout, "GH-SSH-002") || strings.Contains(o.stdout, "EX-001") {
		t.Errorf("with --policy: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
}

func TestWaiversCheckUnreadable(t *testing.T) {
	invalid := filepath.Join(t.TempDir(), "waivers.yaml")
	if err := os.WriteFile(invalid, []byte("- id: GH-SSH-002\n  target: \"*\"\n  expires: soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := runCommand(t, (*app).waiversCommand, "check", invalid)
	if o.code != 2 || !strings.Contains(o.stderr, "justification is required") || !strings.Contains(o.stderr, "not a date") {
		t.Errorf("invalid file: exit %d, stderr %q; want 2 with every problem", o.code, o.stderr)
	}
	for name, args := range map[string][]string{
		"missing file":   {"check", "nope.yaml"},
		"bad --within":   {"check", waiverFile(t), "--within", "-1"},
		"bad --as-of":    {"check", waiverFile(t), "--as-of", "tomorrow"},
		"missing policy": {"check", waiverFile(t), "--policy", "/nonexistent"},
	} {
		if o := runCommand(t, (*app).waiversCommand, args...); o.code != 2 {
			t.Errorf("%s: exit %d, want 2\n%s", name, o.code, o.stderr)
		}
	}
}
