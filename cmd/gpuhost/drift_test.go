package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
)

// drift runs the drift command as run() runs a registered one: the root
// command is not ours to change, so the command is executed on its own.
func drift(t *testing.T, args ...string) outcome {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, log: slog.New(slog.DiscardHandler)}
	cmd := a.driftCommand()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	code := 0
	if err != nil {
		code = scan.ExitUntrusted
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if ee == nil || ee.err != nil {
			fmt.Fprintln(&errOut, "gpuhost:", err)
		}
	}
	return outcome{code, out.String(), errOut.String()}
}

// bakedTree copies the hardened rootfs and writes its manifest beside it.
func bakedTree(t *testing.T) (root, baseline string) {
	t.Helper()
	if !fullBuild {
		t.Skip("the lean build has no manifest command to write the baseline")
	}
	dir := t.TempDir()
	root = filepath.Join(dir, "rootfs")
	if err := os.CopyFS(root, os.DirFS(hardened)); err != nil {
		t.Fatal(err)
	}
	baseline = filepath.Join(dir, "base.json")
	if o := gpuhost(t, "", "manifest", "rootfs", root, "-o", baseline); o.code != 0 {
		t.Fatalf("manifest: exit %d\nstderr: %s", o.code, o.stderr)
	}
	return root, baseline
}

func driftResults(rep *reports.Report) map[string]reports.Result {
	m := map[string]reports.Result{}
	for _, r := range rep.Results {
		if strings.HasPrefix(r.ID, "GH-DRIFT-") {
			m[r.ID] = r
		}
	}
	return m
}

func TestDriftUnchangedTreePasses(t *testing.T) {
	root, baseline := bakedTree(t)
	o := drift(t, "--baseline", baseline, "--rootfs", root, "--params", params, "--format", "json")
	if o.code == scan.ExitUntrusted {
		t.Fatalf("exit %d\nstderr: %s", o.code, o.stderr)
	}
	got := driftResults(jsonReport(t, o))
	want := map[string]string{
		"GH-DRIFT-001": reports.StatusPass, "GH-DRIFT-002": reports.StatusPass, "GH-DRIFT-003": reports.StatusPass,
		"GH-DRIFT-004": reports.StatusPass, "GH-DRIFT-008": reports.StatusPass,
		// No NGC pins in a manifest built without a config; the kernel and
		// NVML checks are for running hosts.
		"GH-DRIFT-005": reports.StatusSkip, "GH-DRIFT-006": reports.StatusSkip, "GH-DRIFT-007": reports.StatusSkip,
	}
	for id, st := range want {
		if got[id].Status != st {
			t.Errorf("%s: %s %q, want %s", id, got[id].Status, got[id].Messages, st)
		}
	}
}

func TestDriftNamesUpgradeReleasedHoldAndChangedFile(t *testing.T) {
	root, baseline := bakedTree(t)
	status := filepath.Join(root, "var", "lib", "dpkg", "status")
	data, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	// Upgrade the held toolkit, and release libnvidia-ml1's hold.
	s = replaceStanza(t, s, "nvidia-container-toolkit", "Version: 1.17.8-1", "Version: 1.18.0-1")
	s = replaceStanza(t, s, "libnvidia-ml1", "Status: hold ok installed", "Status: install ok installed")
	if err := os.WriteFile(status, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	sshd := filepath.Join(root, "etc", "ssh", "sshd_config")
	f, err := os.OpenFile(sshd, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("PermitRootLogin no\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	o := drift(t, "--baseline", baseline, "--rootfs", root, "--params", params, "--format", "json")
	if o.code != 1 {
		t.Fatalf("exit %d, want 1\nstderr: %s", o.code, o.stderr)
	}
	got := driftResults(jsonReport(t, o))
	wants := map[string]string{
		"GH-DRIFT-001": "nvidia-container-toolkit:amd64 is at 1.18.0-1; the baseline has 1.17.8-1",
		"GH-DRIFT-004": "libnvidia-ml1:amd64 was held at 535.261.03-1 in the baseline; now installed at libnvidia-ml1:amd64 535.261.03-1 but not held",
		"GH-DRIFT-008": "/etc/ssh/sshd_config changed since the baseline: sha256 ",
	}
	for id, want := range wants {
		r := got[id]
		if r.Status != reports.StatusFail || len(r.Messages) != 1 || !strings.HasPrefix(r.Messages[0], want) {
			t.Errorf("%s: %s %q, want one failure starting %q", id, r.Status, r.Messages, want)
		}
	}
	for _, id := range []string{"GH-DRIFT-002", "GH-DRIFT-003"} {
		if got[id].Status != reports.StatusPass {
			t.Errorf("%s: %s %q, want pass", id, got[id].Status, got[id].Messages)
		}
	}
}

// replaceStanza replaces old with new inside one package's dpkg stanza.
func replaceStanza(t *testing.T, status, pkg, old, new string) string {
	t.Helper()
	head := "Package: " + pkg + "\n"
	i := strings.Index(status, head)
	if i < 0 {
		t.Fatalf("no stanza for %s", pkg)
	}
	end := strings.Index(status[i:], "\n\n")
	if end < 0 {
		end = len(status) - i
	}
	stanza := status[i : i+end]
	if !strings.Contains(stanza, old) {
		t.Fatalf("stanza for %s has no %q", pkg, old)
	}
	return status[:i] + strings.Replace(stanza, old, new, 1) + status[i+end:]
}

func TestDriftRejectsBadBaseline(t *testing.T) {
	root, _ := bakedTree(t)
	for _, base := range []string{"testdata/drift/wrong-schema.json", filepath.Join(t.TempDir(), "missing.json")} {
		o := drift(t, "--baseline", base, "--rootfs", root)
		if o.code != scan.ExitUntrusted || !strings.Contains(o.stderr, filepath.Base(base)) {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming the file", base, o.code, o.stderr)
		}
	}
	if o := drift(t, "--rootfs", root); o.code != scan.ExitUntrusted || !strings.Contains(o.stderr, "--baseline") {
		t.Errorf("no --baseline: exit %d, stderr %q", o.code, o.stderr)
	}
}

// TestDriftSavedFacts: the baseline replaces the manifest the saved document
// carries, and the config digests it recorded are compared.
func TestDriftSavedFacts(t *testing.T) {
	root, baseline := bakedTree(t)
	fo := gpuhost(t, "", "facts", "rootfs", root)
	if fo.code != 0 {
		t.Fatalf("facts: exit %d\nstderr: %s", fo.code, fo.stderr)
	}
	saved := filepath.Join(t.TempDir(), "facts.json")
	if err := os.WriteFile(saved, []byte(fo.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	o := drift(t, "--baseline", baseline, "--facts", saved, "--params", params, "--format", "json")
	if o.code == scan.ExitUntrusted {
		t.Fatalf("exit %d\nstderr: %s", o.code, o.stderr)
	}
	got := driftResults(jsonReport(t, o))
	if got["GH-DRIFT-001"].Status != reports.StatusPass {
		t.Errorf("GH-DRIFT-001: %s %q, want pass", got["GH-DRIFT-001"].Status, got["GH-DRIFT-001"].Messages)
	}
	// Facts saved by `gpuhost facts` carry no digests: the check skips, never passes.
	if r := got["GH-DRIFT-008"]; r.Status != reports.StatusSkip {
		t.Errorf("GH-DRIFT-008: %s %q, want skip", r.Status, r.Messages)
	}
	if o := drift(t, "--baseline", baseline, "--facts", "testdata/drift/wrong-schema.json"); o.code != scan.ExitUntrusted || !strings.Contains(o.stderr, "wrong-schema.json") {
		t.Errorf("bad facts: exit %d, stderr %q", o.code, o.stderr)
	}
}
