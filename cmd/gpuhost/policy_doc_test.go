package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyDoc(t *testing.T) {
	build := (*app).policyDocCommand

	o := runCommand(t, build)
	if o.code != 0 {
		t.Fatalf("markdown: exit %d\n%s", o.code, o.stderr)
	}
	// The committed catalog is what the command prints for the default pack
	// (render/catalog's test says how to regenerate it).
	want, err := os.ReadFile("../../docs/policies.md")
	if err != nil {
		t.Fatal(err)
	}
	if o.stdout != string(want) {
		t.Error("gpuhost policy doc differs from docs/policies.md; run go test ./render/catalog -update")
	}

	out := filepath.Join(t.TempDir(), "catalog.html")
	o = runCommand(t, build, "--format", "html", "-o", out)
	if o.code != 0 || o.stdout != "" {
		t.Fatalf("html -o: exit %d, stdout %q\n%s", o.code, o.stdout, o.stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(page), "<!DOCTYPE html>") || !strings.Contains(string(page), "GH-SSH-004") {
		t.Errorf("%s is not the HTML catalog", out)
	}
	if info, err := os.Stat(out); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("%s: mode %v, err %v; want 0644", out, info.Mode().Perm(), err)
	}

	if o := runCommand(t, build, "--format", "pdf"); o.code != 2 {
		t.Errorf("unknown format: exit %d, want 2", o.code)
	}
	if o := runCommand(t, build, "--policy", "/nonexistent"); o.code != 2 {
		t.Errorf("missing pack: exit %d, want 2", o.code)
	}
}
