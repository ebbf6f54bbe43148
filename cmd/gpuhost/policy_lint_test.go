package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestPolicyLintDefaultPackClean(t *testing.T) {
	lint := (*app).policyLintCommand
	// A clean run says what it checked.
	clean := regexp.MustCompile(`^checked [1-9][0-9]* checks in [1-9][0-9]* policy files \(and [1-9][0-9]* test files\) of the embedded pack: no problems\n$`)
	if o := runCommand(t, lint); o.code != 0 || !clean.MatchString(o.stdout) {
		t.Errorf("embedded pack: exit %d, want 0 and only what was checked\n%s%s", o.code, o.stdout, o.stderr)
	}
	if o := runCommand(t, lint, "--policy", exportPack(t)); o.code != 0 {
		t.Errorf("the exported pack: exit %d, want 0\n%s%s", o.code, o.stdout, o.stderr)
	}
}

func TestPolicyLintFindings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ssh/a.rego", `# METADATA
# title: a
# description: a
# scope: package
# custom:
#   id: GH-TLS-001
#   severity: high
#   remediation: fix
#   location: /etc/x.conf
#   controls: {nist-800-53: [SC-8]}
#   targets: [rootfs]
#   requires: [ssh]
package gpuhost.ssh.a

deny contains "x" if input.ssh.bad
`)
	write("tls/b.rego", `# METADATA
# title: b
# description: b
# scope: package
# custom:
#   id: GH-TLS-001
#   severity: high
#   remediation: fix
#   location: /etc/x.conf
#   controls: {nist-800-53: [SC-8]}
#   targets: [rootfs]
#   requires: [tls]
package gpuhost.tls.b

deny contains "x" if input.tls.bad
`)
	write("net/c.rego", `# METADATA
# title: c
# scope: package
# custom:
#   id: GH-NET-009
#   severity: low
#   targets: [rootfs]
package gpuhost.net.c

deny contains "x" if data.gpuhost.params.not_in_schema
`)
	write("net/d.rego", `# METADATA
# title: d
# description: d
# scope: package
# custom:
#   id: GH-NET-010
#   severity: low
#   remediation: fix
#   location: /etc/x.conf
#   controls: {nist-800-53: [SC-7]}
#   targets: [rootfs]
#   requires: []
package gpuhost.net.d

deny contains "x" if data.gpuhost.params.undeclared_knob
`)
	write("net/old.rego", `package gpuhost.net.old

deny[msg] { msg := "v0" }
`)
	write("net/broken.rego", "package gpuhost.net.broken\n\ndeny contains if {\n")

	o := runCommand(t, (*app).policyLintCommand, "--policy", dir)
	if o.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", o.code, o.stdout, o.stderr)
	}
	t.Log(o.stdout)
	for _, want := range []string{
		"duplicate-id: id GH-TLS-001 is already used by ssh/a.rego",
		"ssh/a.rego:1: id-prefix: id GH-TLS-001 is in ssh/",
		"net/c.rego:1: metadata: description is missing",
		"net/c.rego:1: metadata: custom.remediation is missing",
		"net/c.rego:1: metadata: custom.controls is missing",
		"net/c.rego:1: metadata: custom.requires is missing",
		"net/d.rego: undeclared-param: GH-NET-010 reads params.undeclared_knob",
		"net/old.rego:3: rego-v0:",
		"net/broken.rego:",
		": parse:",
		"problems\n",
	} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("no %q in\n%s", want, o.stdout)
		}
	}
	if strings.Contains(o.stdout, "net/d.rego:1: metadata") {
		t.Errorf("a complete METADATA was flagged:\n%s", o.stdout)
	}

	o = runCommand(t, (*app).policyLintCommand, "--policy", dir, "--format", "json")
	var findings []struct{ File, Rule, Message string }
	if err := json.Unmarshal([]byte(o.stdout), &findings); err != nil || o.code != 1 || len(findings) < 8 {
		t.Errorf("json: exit %d, %d findings, err %v\n%s", o.code, len(findings), err, o.stdout)
	}

	// A pack's own schema declares its knobs.
	write("params.schema.json", `{"type":"object","properties":{"undeclared_knob":{"type":"boolean"},"not_in_schema":{}}}`)
	o = runCommand(t, (*app).policyLintCommand, "--policy", dir)
	if strings.Contains(o.stdout, "undeclared_knob") {
		t.Errorf("declared in the pack's schema, still flagged:\n%s", o.stdout)
	}
}

func TestPolicyLintUnreadable(t *testing.T) {
	lint := (*app).policyLintCommand
	if o := runCommand(t, lint, "--policy", filepath.Join(t.TempDir(), "missing")); o.code != 2 {
		t.Errorf("missing dir: exit %d, want 2", o.code)
	}
	if o := runCommand(t, lint, "--policy", t.TempDir()); o.code != 2 {
		t.Errorf("empty dir: exit %d, want 2", o.code)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.rego"), []byte("package gpuhost.x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "params.schema.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := runCommand(t, lint, "--policy", dir); o.code != 2 || !strings.Contains(o.stderr, "params.schema.json") {
		t.Errorf("broken schema: exit %d, want 2 naming it\n%s", o.code, o.stderr)
	}
}
