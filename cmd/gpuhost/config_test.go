package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSettingsPrecedence: a flag beats its GPUHOST_ variable, which beats
// the settings file, which beats the default; the file is --config, else
// gpuhost.yaml in the working directory; lists set repeatable flags, and a
// key that is no flag of gpuhost is an error naming the flag meant.
func TestSettingsPrecedence(t *testing.T) {
	weak, err := filepath.Abs(filepath.Join("testdata", "rootfs-weak"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	jsonOut, sarifOut := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.sarif")
	// "within" is a flag of waivers check: the file serves every command.
	advisory := write("advisory.yaml", "fail-on: none\nwithin: 7\nreport:\n  - json="+jsonOut+"\n  - sarif="+sarifOut+"\n")

	if o := gpuhost(t, "", "scan", "rootfs", weak, "--config", advisory); o.code != 0 {
		t.Errorf("file fail-on none: exit %d\n%s", o.code, o.stderr)
	}
	for _, p := range []string{jsonOut, sarifOut} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the file's report list: %v", err)
		}
	}
	t.Setenv("GPUHOST_FAIL_ON", "high")
	if o := gpuhost(t, "", "scan", "rootfs", weak, "--config", advisory); o.code != 1 {
		t.Errorf("GPUHOST_FAIL_ON=high over the file: exit %d\n%s", o.code, o.stderr)
	}
	if o := gpuhost(t, "", "scan", "rootfs", weak, "--config", advisory, "--fail-on", "none"); o.code != 0 {
		t.Errorf("--fail-on none over GPUHOST_FAIL_ON: exit %d\n%s", o.code, o.stderr)
	}
	t.Setenv("GPUHOST_FAIL_ON", "")

	// A repeatable flag from the environment takes a comma-separated list.
	t.Setenv("GPUHOST_CHECKS", "GH-SSH-001,GH-IAM-001")
	o := gpuhost(t, "", "scan", "rootfs", weak, "--format", "json")
	if rep := jsonReport(t, o); len(rep.Results) != 2 {
		t.Errorf("GPUHOST_CHECKS: %d results, want 2", len(rep.Results))
	}
	t.Setenv("GPUHOST_CHECKS", "")

	typo := write("typo.yaml", "fail-onn: none\n")
	if o := gpuhost(t, "", "scan", "rootfs", weak, "--config", typo); o.code != 2 || !strings.Contains(o.stderr, `"fail-onn" is no flag of gpuhost; did you mean "fail-on"?`) {
		t.Errorf("a key that is no flag: exit %d\n%s", o.code, o.stderr)
	}
	bad := write("bad.yaml", "fail-on: severe\n")
	if o := gpuhost(t, "", "scan", "rootfs", weak, "--config", bad); o.code != 2 || !strings.Contains(o.stderr, "fail-on") {
		t.Errorf("a bad value: exit %d\n%s", o.code, o.stderr)
	}
	if o := gpuhost(t, "", "scan", "rootfs", weak, "--config", filepath.Join(dir, "missing.yaml")); o.code != 2 {
		t.Errorf("a missing --config: exit %d", o.code)
	}

	// Without --config, gpuhost.yaml in the working directory.
	write("gpuhost.yaml", "fail-on: none\n")
	t.Chdir(dir)
	if o := gpuhost(t, "", "scan", "rootfs", weak); o.code != 0 {
		t.Errorf("gpuhost.yaml in the working directory: exit %d\n%s", o.code, o.stderr)
	}
}
