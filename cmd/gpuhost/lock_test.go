//go:build !lean

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/manifest/lock"
	"github.com/gpuhost/gpuhost/manifest/treedigest"
)

func writeManifest(t *testing.T, dir string, pkgs ...manifest.Package) string {
	t.Helper()
	m := &manifest.Manifest{
		Schema:      manifest.Schema,
		Packages:    pkgs,
		ConfigFiles: []manifest.ConfigFile{{Path: "/etc/apt/sources.list", SHA256: strings.Repeat("c", 64)}},
		Build:       manifest.BuildInfo{Template: "debian-12-gpu", Time: "2025-01-01T00:00:00Z"},
	}
	p := filepath.Join(dir, "manifest.json")
	if err := m.Write(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLockCommandWritesTheTemplatesLock(t *testing.T) {
	dir := t.TempDir()
	m := writeManifest(t, dir,
		manifest.Package{Package: facts.Package{Name: "libc6", Version: "2.36-9", Arch: "amd64"}, SHA256: strings.Repeat("a", 64)},
		manifest.Package{Package: facts.Package{Name: "adduser", Version: "3.134", Arch: "all"}, SHA256: strings.Repeat("b", 64)})
	t.Chdir(dir)
	if err := os.Mkdir("images", 0o755); err != nil {
		t.Fatal(err)
	}
	if o := gpuhost(t, "", "lock", "--from", m); o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	l, err := lock.ReadFile(filepath.Join("images", "debian-12-gpu.lock"))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Packages) != 2 || l.Packages[0].Spec() != "adduser=3.134" || len(l.Sources) != 1 || l.Template != "debian-12-gpu" {
		t.Errorf("lock %+v", l)
	}
	out := filepath.Join(dir, "other.lock")
	if o := gpuhost(t, "", "lock", "--from", m, "-o", out); o.code != 0 {
		t.Fatalf("-o: exit %d: %s", o.code, o.stderr)
	}
	if _, err := lock.ReadFile(out); err != nil {
		t.Error(err)
	}
}

func TestLockCommandRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema": "gpuhost.manifest/v1", "packages": [{"name": 1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	noSums := writeManifest(t, t.TempDir(), manifest.Package{Package: facts.Package{Name: "libc6", Version: "2.36-9", Arch: "amd64"}})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lock"}, "--from is required"},
		{[]string{"lock", "--from", filepath.Join(dir, "none.json")}, `reading manifest "` + filepath.Join(dir, "none.json") + `"`},
		{[]string{"lock", "--from", bad}, `parsing manifest "` + bad + `"`},
		{[]string{"lock", "--from", noSums, "-o", filepath.Join(dir, "x.lock")}, "no .deb sha256 for 1 packages (libc6=2.36-9)"},
	} {
		o := gpuhost(t, "", tc.args...)
		if o.code != 2 || !strings.Contains(o.stderr, tc.want) {
			t.Errorf("%q: exit %d, %q; want exit 2 with %q", tc.args, o.code, o.stderr, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.lock")); err == nil {
		t.Error("a lock was written from a manifest without digests")
	}
}

func TestTreeDigestCommand(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := treedigest.Digest(dir, treedigest.Options{Exclude: treedigest.BuildExcludes})
	if err != nil {
		t.Fatal(err)
	}
	o := gpuhost(t, "", "tree-digest", dir)
	if o.code != 0 || o.stdout != want+"\n" {
		t.Errorf("exit %d, %q (%s); want %s", o.code, o.stdout, o.stderr, want)
	}
	o = gpuhost(t, "", "tree-digest", "--list", dir)
	if o.code != 0 || !strings.HasPrefix(o.stdout, `"/" dir `) || !strings.Contains(o.stdout, `"/f" file 0644 `) {
		t.Errorf("--list: exit %d:\n%s", o.code, o.stdout)
	}
	if o := gpuhost(t, "", "tree-digest", filepath.Join(dir, "none")); o.code != 2 {
		t.Errorf("a missing tree: exit %d, want 2", o.code)
	}
}
