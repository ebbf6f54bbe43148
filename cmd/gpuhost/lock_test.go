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

// TestLockCommandRefusesForgedRecords: whoever can write an image can
// write its manifest, and a field that carries a newline would otherwise
// carry records of its own into the lock. Each is refused, naming the
// manifest and the package or field and never echoing the value, and no
// lock file is written, at the template's path or at -o.
func TestLockCommandRefusesForgedRecords(t *testing.T) {
	const inject = "\nmirror http://evil\n"
	sum := strings.Repeat("a", 64)
	good := func() *manifest.Manifest {
		return &manifest.Manifest{
			Schema: manifest.Schema,
			Packages: []manifest.Package{
				{Package: facts.Package{Name: "adduser", Version: "3.134", Arch: "all"}, SHA256: sum},
				{Package: facts.Package{Name: "libc6", Version: "2.36-9", Arch: "amd64"}, SHA256: sum},
			},
			ConfigFiles: []manifest.ConfigFile{
				{Path: "/etc/apt/sources.list.d/debian.sources", SHA256: sum},
				{Path: "/usr/share/keyrings/debian-archive-keyring.gpg", SHA256: sum},
			},
			// No mirror, as a snapshot build has none: the record an
			// attacker adds is then the only one.
			Build: manifest.BuildInfo{Template: "debian-12-gpu", Snapshot: "20250101T000000Z", Time: "2025-01-01T00:00:00Z"},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(m *manifest.Manifest)
		want   string
	}{
		{"version", func(m *manifest.Manifest) { m.Packages[1].Version += inject }, "package libc6 (packages[1]): version is not a Debian version"},
		{"version with whole records", func(m *manifest.Manifest) {
			m.Packages[1].Version += " amd64 " + sum + inject + "package evil=1 all " + sum + "\npackage libc7=1"
		}, "package libc6 (packages[1]): version is not a Debian version"},
		{"name", func(m *manifest.Manifest) { m.Packages[1].Name += inject }, "packages[1]: the name is not a Debian package name"},
		{"architecture", func(m *manifest.Manifest) { m.Packages[1].Arch += inject }, "package libc6 (packages[1]): architecture is not a Debian architecture"},
		{"sha256", func(m *manifest.Manifest) { m.Packages[1].SHA256 += inject }, "package libc6 (packages[1]): sha256 is not 64 lower-case hex digits"},
		{"template", func(m *manifest.Manifest) { m.Build.Template += inject }, "build.template: the template is not a name"},
		{"mirror", func(m *manifest.Manifest) { m.Build.Mirror = "http://mirror.invalid/debian" + inject }, "build.mirror: the mirror is not an http, https or file URL"},
		{"snapshot", func(m *manifest.Manifest) { m.Build.Snapshot += inject }, "build.snapshot: the snapshot is not a time"},
		{"source path", func(m *manifest.Manifest) { m.ConfigFiles[0].Path += inject }, "config_files[0]: the path of an apt file is not a clean absolute path"},
		{"source path in its directory", func(m *manifest.Manifest) { m.ConfigFiles[0].Path += "\nmirror http:evil" }, "config_files[0]: the path of an apt source is not a clean absolute path"},
		{"keyring path", func(m *manifest.Manifest) { m.ConfigFiles[1].Path += inject }, "config_files[1]: the path of an apt file is not a clean absolute path"},
		{"keyring path in its directory", func(m *manifest.Manifest) { m.ConfigFiles[1].Path += "\tevil" }, "config_files[1]: the path of an apt keyring is not a clean absolute path"},
		{"source sha256", func(m *manifest.Manifest) { m.ConfigFiles[0].SHA256 += inject }, "config_files[0] (/etc/apt/sources.list.d/debian.sources): sha256 is not 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := good()
			tc.change(m)
			from := filepath.Join(dir, "manifest.json")
			if err := m.Write(from); err != nil {
				t.Fatal(err)
			}
			t.Chdir(dir)
			if err := os.Mkdir("images", 0o755); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"lock", "--from", from}, {"lock", "--from", from, "-o", filepath.Join(dir, "out.lock")}} {
				o := gpuhost(t, "", args...)
				if o.code != 2 || !strings.Contains(o.stderr, `manifest "`+from+`": `+tc.want) {
					t.Errorf("%q: exit %d, %q; want exit 2 with %q", args, o.code, o.stderr, tc.want)
				}
				if strings.Contains(o.stderr, "evil") {
					t.Errorf("%q: the error echoes the manifest's value: %q", args, o.stderr)
				}
			}
			for _, d := range []string{dir, "images"} {
				ents, err := os.ReadDir(d)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range ents {
					if e.Name() != "manifest.json" && e.Name() != "images" {
						t.Errorf("%s was written", filepath.Join(d, e.Name()))
					}
				}
			}
		})
	}
	dir := t.TempDir()
	from := filepath.Join(dir, "manifest.json")
	if err := good().Write(from); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.lock")
	if o := gpuhost(t, "", "lock", "--from", from, "-o", out); o.code != 0 {
		t.Fatalf("the manifest the cases change: exit %d: %s", o.code, o.stderr)
	}
	l, err := lock.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Packages) != 2 || len(l.Sources) != 1 || len(l.Keyrings) != 1 || l.Mirror != "" || l.Snapshot != "20250101T000000Z" {
		t.Errorf("lock %+v", l)
	}
}
