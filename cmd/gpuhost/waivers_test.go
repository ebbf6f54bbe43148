package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/reports"
)

func waiverFile(t *testing.T, entries ...[2]string) string {
	t.Helper()
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "- id: %s\n  target: \"*\"\n  justification: lab image\n  approved_by: security@example.com\n  expires: %s\n  ticket: SEC-1\n", e[0], e[1])
	}
	file := filepath.Join(t.TempDir(), "waivers.yaml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// examplePack writes a one-check pack, EX-001, that applies to targets.
func examplePack(t *testing.T, targets string) string {
	t.Helper()
	dir := t.TempDir()
	rego := `# METADATA
# title: Example
# custom:
#   id: EX-001
#   severity: low
#   remediation: none
#   targets: [` + targets + `]
package gpuhost.example.one

deny contains "x" if input.never
`
	if err := os.WriteFile(filepath.Join(dir, "one.rego"), []byte(rego), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
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
	dir := examplePack(t, "rootfs")
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

func TestWaiversSignAndVerify(t *testing.T) {
	build := (*app).waiversCommand
	priv, pub := rsaKeyFiles(t)
	_, otherPub := rsaKeyFiles(t)
	file := waiverFile(t, [2]string{"GH-SSH-002", inDays(90)})

	if o := runCommand(t, build, "check", file, "--verification-key", pub); o.code != 2 || !strings.Contains(o.stderr, "no signature") {
		t.Errorf("unsigned file with a key: exit %d, stderr %q; want 2", o.code, o.stderr)
	}
	if o := runCommand(t, build, "sign", file); o.code != 2 || !strings.Contains(o.stderr, "--signing-key is required") {
		t.Errorf("sign without a key: exit %d, stderr %q", o.code, o.stderr)
	}
	if o := runCommand(t, build, "sign", file, "--signing-key", priv); o.code != 0 {
		t.Fatalf("sign: exit %d\n%s", o.code, o.stderr)
	}
	if _, err := os.Stat(file + ".sig"); err != nil {
		t.Fatalf("no signature beside the file: %v", err)
	}
	o := runCommand(t, build, "check", file, "--verification-key", pub)
	if o.code != 0 || !strings.Contains(o.stdout, "waivers.yaml.sig verified with "+pub) {
		t.Errorf("signed file: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	if o := runCommand(t, build, "check", file); o.code != 0 || !strings.Contains(o.stdout, "signature: not checked") {
		t.Errorf("without a key the signature is not checked, and says so: exit %d\n%s", o.code, o.stdout)
	}
	if o := runCommand(t, build, "check", file, "--verification-key", otherPub); o.code != 2 || !strings.Contains(o.stderr, "bad signature") {
		t.Errorf("another key: exit %d, stderr %q; want 2", o.code, o.stderr)
	}
	// --waivers-key takes precedence over the pack's key.
	if o := runCommand(t, build, "check", file, "--verification-key", otherPub, "--waivers-key", pub); o.code != 0 {
		t.Errorf("--waivers-key: exit %d\n%s", o.code, o.stderr)
	}

	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(string(data), "lab image", "all images", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := runCommand(t, build, "check", file, "--verification-key", pub); o.code != 2 || !strings.Contains(o.stderr, "changed after signing") {
		t.Errorf("tampered file: exit %d, stderr %q; want 2", o.code, o.stderr)
	}

	invalid := filepath.Join(t.TempDir(), "w.yaml")
	if err := os.WriteFile(invalid, []byte("- id: GH-SSH-002\n  target: \"*\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := runCommand(t, build, "sign", invalid, "--signing-key", priv); o.code != 2 || !strings.Contains(o.stderr, "ticket is required") {
		t.Errorf("signing an invalid file: exit %d, stderr %q", o.code, o.stderr)
	}
	if _, err := os.Stat(invalid + ".sig"); err == nil {
		t.Error("an invalid file was signed")
	}
	out := filepath.Join(t.TempDir(), "elsewhere.sig")
	if o := runCommand(t, build, "sign", waiverFile(t), "--signing-key", priv, "-o", out); o.code != 0 {
		t.Errorf("sign -o: exit %d\n%s", o.code, o.stderr)
	} else if _, err := os.Stat(out); err != nil {
		t.Errorf("sign -o wrote nothing: %v", err)
	}
}

func TestWaiverFlagsLoad(t *testing.T) {
	priv, pub := rsaKeyFiles(t)
	file := waiverFile(t, [2]string{"GH-SSH-002", inDays(90)})

	if list, err := (&waiverFlags{}).load(&policyFlags{}); err != nil || list != nil {
		t.Errorf("no --waivers: %v, %v", list, err)
	}
	if _, err := (&waiverFlags{key: pub}).load(&policyFlags{}); err == nil {
		t.Error("--waivers-key without --waivers accepted")
	}
	if list, err := (&waiverFlags{file: file}).load(&policyFlags{}); err != nil || len(list) != 1 {
		t.Errorf("no key: %v, %v", list, err)
	}
	// A scan that verifies its pack verifies its waivers with the same key.
	if _, err := (&waiverFlags{file: file}).load(&policyFlags{verificationKey: pub, verificationAlg: "RS256"}); err == nil ||
		!strings.Contains(err.Error(), "no signature") {
		t.Errorf("unsigned waivers under --verification-key: %v", err)
	}
	if o := runCommand(t, (*app).waiversCommand, "sign", file, "--signing-key", priv); o.code != 0 {
		t.Fatalf("sign: exit %d\n%s", o.code, o.stderr)
	}
	if list, err := (&waiverFlags{file: file}).load(&policyFlags{verificationKey: pub, verificationAlg: "RS256"}); err != nil || len(list) != 1 {
		t.Errorf("signed waivers under --verification-key: %v, %v", list, err)
	}
	if list, err := (&waiverFlags{file: file, key: pub}).load(&policyFlags{}); err != nil || len(list) != 1 {
		t.Errorf("signed waivers under --waivers-key: %v, %v", list, err)
	}
	if _, err := (&waiverFlags{file: file, key: "/nonexistent.pem"}).load(&policyFlags{}); err == nil {
		t.Error("a missing key file accepted")
	}
}

func TestWaiversCheckScope(t *testing.T) {
	dir := examplePack(t, "rootfs, image")
	scoped := func(kinds string) string {
		file := filepath.Join(t.TempDir(), "waivers.yaml")
		w := "- id: EX-001\n  target: \"*\"\n  justification: j\n  approved_by: a@example.com\n  expires: " + inDays(90) +
			"\n  ticket: SEC-9\n  scope: {kinds: [" + kinds + "], hosts: [\"gpu-*\"]}\n"
		if err := os.WriteFile(file, []byte(w), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	o := runCommand(t, (*app).waiversCommand, "check", scoped("host, oci"), "--policy", dir)
	if o.code != 1 {
		t.Errorf("scoped to kinds the check skips: exit %d, want 1\n%s%s", o.code, o.stdout, o.stderr)
	}
	for _, want := range []string{"out-of-scope", "kinds host, oci; hosts gpu-*", "SEC-9", "rootfs, image", "1 out of scope"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, o.stdout)
		}
	}
	if o := runCommand(t, (*app).waiversCommand, "check", scoped("host, image"), "--policy", dir); o.code != 0 || !strings.Contains(o.stdout, "0 out of scope") {
		t.Errorf("scoped to a kind the check applies to: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	if o := runCommand(t, (*app).waiversCommand, "check", scoped("vm"), "--policy", dir); o.code != 2 || !strings.Contains(o.stderr, `scope kind "vm"`) {
		t.Errorf("an unknown kind: exit %d, stderr %q; want 2", o.code, o.stderr)
	}
}

func TestWaiversCheckMissingTicket(t *testing.T) {
	file := filepath.Join(t.TempDir(), "waivers.yaml")
	w := "- id: GH-SSH-002\n  target: \"*\"\n  justification: lab image\n  approved_by: security@example.com\n  expires: " + inDays(30) + "\n"
	if err := os.WriteFile(file, []byte(w), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := runCommand(t, (*app).waiversCommand, "check", file); o.code != 2 || !strings.Contains(o.stderr, "entry 1 (GH-SSH-002): ticket is required") {
		t.Errorf("a waiver without a ticket: exit %d, stderr %q; want 2 naming the entry", o.code, o.stderr)
	}
}

// TestScanWaiverScopeAndSignature runs the scan end to end: a scoped waiver
// waives only on targets of its kind and hostname, and under a verification
// key only a signed, untouched waiver file loads.
func TestScanWaiverScopeAndSignature(t *testing.T) {
	priv, pub := rsaKeyFiles(t)
	_, otherPub := rsaKeyFiles(t)
	file := filepath.Join(t.TempDir(), "waivers.yaml")
	write := func(kinds string) {
		t.Helper()
		w := "- id: GH-SSH-001\n  target: \"*\"\n  justification: break-glass on the lab image\n  approved_by: security@example.com\n" +
			"  expires: " + inDays(30) + "\n  ticket: SEC-77\n  scope: {kinds: [" + kinds + "], hosts: [\"gpu-sample-*\"]}\n"
		if err := os.WriteFile(file, []byte(w), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	status := func(o outcome) (string, *reports.Waiver) {
		t.Helper()
		for _, r := range jsonReport(t, o).Results {
			if r.ID == "GH-SSH-001" {
				return r.Status, r.Waiver
			}
		}
		t.Fatal("no GH-SSH-001 in the report")
		return "", nil
	}

	write("rootfs")
	if st, w := status(gpuhost(t, "", "scan", "rootfs", weak, "--waivers", file, "--format", "json")); st != reports.StatusWaived ||
		w == nil || w.Ticket != "SEC-77" || w.Scope == nil || w.Scope.Hosts[0] != "gpu-sample-*" {
		t.Errorf("a waiver scoped to rootfs on gpu-sample-*: %s %+v", st, w)
	}
	write("host, image")
	if st, _ := status(gpuhost(t, "", "scan", "rootfs", weak, "--waivers", file, "--format", "json")); st != reports.StatusFail {
		t.Errorf("a waiver scoped to hosts and images waived a rootfs: %s", st)
	}

	write("rootfs")
	if o := gpuhost(t, "", "scan", "rootfs", weak, "--waivers", file, "--verification-key", pub); o.code != 2 || !strings.Contains(o.stderr, "no signature") {
		t.Errorf("unsigned waivers under --verification-key: exit %d, stderr %q", o.code, o.stderr)
	}
	if o := gpuhost(t, "", "waivers", "sign", file, "--signing-key", priv); o.code != 0 {
		t.Fatalf("sign: exit %d\n%s", o.code, o.stderr)
	}
	if st, _ := status(gpuhost(t, "", "scan", "rootfs", weak, "--waivers", file, "--verification-key", pub, "--format", "json")); st != reports.StatusWaived {
		t.Errorf("signed waivers under --verification-key: %s", st)
	}
	if o := gpuhost(t, "", "scan", "rootfs", weak, "--waivers", file, "--waivers-key", otherPub); o.code != 2 || !strings.Contains(o.stderr, "bad signature") {
		t.Errorf("another key: exit %d, stderr %q", o.code, o.stderr)
	}
	write("rootfs, host")
	if o := gpuhost(t, "", "scan", "rootfs", weak, "--waivers", file, "--verification-key", pub); o.code != 2 || !strings.Contains(o.stderr, "changed after signing") {
		t.Errorf("tampered waivers: exit %d, stderr %q", o.code, o.stderr)
	}
}
