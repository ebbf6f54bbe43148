package manifest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

var update = flag.Bool("update", false, "rewrite golden files")

const dpkgStatusText = `Package: containerd
Status: install ok installed
Architecture: amd64
Version: 1.6.20~ds1-1+b1

Package: libnvidia-ml1
Status: hold ok installed
Architecture: amd64
Version: 535.261.03-1

Package: nvidia-smi
Status: hold ok installed
Architecture: amd64
Version: 535.261.03-1

Package: removed-thing
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0
`

// writeTree lays files out under a new root; a value of "\x00dir" makes a
// directory instead.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if body == "\x00dir" {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func open(t *testing.T, root string) sysroot.FS {
	t.Helper()
	fsys, c, err := sysroot.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return fsys
}

func sampleOptions() Options {
	return Options{
		Pins: Pins{
			Driver: "535.261.03-1", DriverBranch: "535", DriverFlavor: "proprietary", DriverSource: "debian",
			Packages:  []PackagePin{{Name: "libnvidia-ml1", Version: "535.261.03-1"}, {Name: "nvidia-smi", Version: "535.261.03-1"}},
			NGCImages: []Image{{Ref: "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu22.04", Digest: "sha256:" + strings.Repeat("ab", 32)}},
		},
		Build:        BuildInfo{Template: "debian-12-gpu", PluginVersion: "0.1.0", Mirror: "http://mirror.invalid/debian", Snapshot: "20250101T000000Z"},
		Time:         time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)),
		PolicyDigest: "sha256:" + strings.Repeat("cd", 32),
	}
}

func sampleTree(t *testing.T) string {
	return writeTree(t, map[string]string{
		"/var/lib/dpkg/status":                         dpkgStatusText,
		"/etc/containerd/config.toml":                  "version = 2\n",
		"/etc/containerd/conf.d/99-zz-gpuhost.toml":    "version = 2\n[plugins]\n",
		"/etc/containerd/conf.d/notes.txt":             "not toml, not recorded\n",
		"/etc/ssh/sshd_config":                         "Include /etc/ssh/sshd_config.d/*.conf\n",
		"/etc/ssh/sshd_config.d/10-hardening.conf":     "PasswordAuthentication no\n",
		"/etc/ssh/sshd_config.d/sub":                   "\x00dir",
		"/etc/default/grub":                            "GRUB_CMDLINE_LINUX=\"\"\n",
		"/etc/default/grub.d/60-gpuhost.cfg":           "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX systemd.unified_cgroup_hierarchy=1\"\n",
		"/etc/modprobe.d/blacklist-nouveau.conf":       "blacklist nouveau\n",
		"/etc/modprobe.d/readme":                       "not .conf\n",
		"/etc/gpuhost/secret-ngc-key":                  "nvapi-SECRET\n",
		"/etc/nftables.conf":                           "table inet filter {}\n",
		"/etc/crypttab":                                "root UUID=1 none luks\n",
		"/etc/apt/sources.list.d/debian.sources":       "Types: deb\n",
		"/etc/apt/preferences.d/gpuhost-pins":          "Package: libnvidia-ml1\nPin: version 535.261.03-1\n",
		"/usr/share/keyrings/debian-archive.gpg":       "\x99keyring",
		"/etc/apt/keyrings/nvidia.gpg":                 "\x99keyring",
		"/etc/cdi/nvidia.yaml":                         "cdiVersion: 0.5.0\n",
		"/etc/nvidia-container-runtime/config.toml":    "[nvidia-container-cli]\n",
		"/etc/sudoers":                                 "root ALL=(ALL) ALL\n",
		"/etc/sudoers.d/gpuhost-ops":                   "%ops ALL=(root) /usr/bin/nvidia-smi\n",
		"/etc/audit/rules.d/gpuhost.rules":             "-w /etc/sudoers -p wa\n",
		"/etc/audit/audit.rules":                       "regenerated at boot\n",
		"/etc/pam.d/sshd":                              "auth required pam_google_authenticator.so\n",
		"/etc/ssl/openssl.cnf.d/50-gpuhost.cnf":        "[gpuhost_system_default_sect]\nMinProtocol = TLSv1.3\n",
		"/etc/systemd/journald.conf.d/50-gpuhost.conf": "[Journal]\nStorage=persistent\n",
	})
}

func TestBuildGolden(t *testing.T) {
	root := sampleTree(t)
	m, err := Build(context.Background(), open(t, root), sampleOptions())
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "manifest.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if string(got) != string(want) {
		t.Errorf("manifest differs from %s (run go test -update to accept):\n%s", golden, got)
	}
	if strings.Contains(string(got), "SECRET") || strings.Contains(string(got), "PasswordAuthentication") {
		t.Error("manifest carries file contents")
	}
	if m.Build.Time != "2025-01-02T02:04:05Z" {
		t.Errorf("time %q not in UTC", m.Build.Time)
	}
	// The document must read back, and the facts collector's check on the
	// schema must hold.
	back, err := Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Packages) != 3 || !back.Packages[1].Held || back.Packages[0].Held {
		t.Errorf("inventory %+v: want 3 installed, libnvidia-ml1 held, containerd not", back.Packages)
	}
}

func TestConfigFilesSelected(t *testing.T) {
	m, err := Build(context.Background(), open(t, sampleTree(t)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range m.ConfigFiles {
		paths = append(paths, f.Path)
	}
	want := []string{
		"/etc/apt/keyrings/nvidia.gpg",
		"/etc/apt/preferences.d/gpuhost-pins",
		"/etc/apt/sources.list.d/debian.sources",
		"/etc/audit/rules.d/gpuhost.rules",
		"/etc/cdi/nvidia.yaml",
		"/etc/containerd/conf.d/99-zz-gpuhost.toml",
		"/etc/containerd/config.toml",
		"/etc/crypttab",
		"/etc/default/grub",
		"/etc/default/grub.d/60-gpuhost.cfg",
		"/etc/modprobe.d/blacklist-nouveau.conf",
		"/etc/nftables.conf",
		"/etc/nvidia-container-runtime/config.toml",
		"/etc/pam.d/sshd",
		"/etc/ssh/sshd_config",
		"/etc/ssh/sshd_config.d/10-hardening.conf",
		"/etc/ssl/openssl.cnf.d/50-gpuhost.cnf",
		"/etc/sudoers",
		"/etc/sudoers.d/gpuhost-ops",
		"/etc/systemd/journald.conf.d/50-gpuhost.conf",
		"/usr/share/keyrings/debian-archive.gpg",
	}
	if strings.Join(paths, "\n") != strings.Join(want, "\n") {
		t.Errorf("config files:\n%s\nwant:\n%s", strings.Join(paths, "\n"), strings.Join(want, "\n"))
	}
	sum := sha256.Sum256([]byte("version = 2\n"))
	if m.ConfigFiles[6].SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("digest of config.toml %q", m.ConfigFiles[6].SHA256)
	}
	if m.Pins.Packages == nil || m.Pins.NGCImages == nil {
		t.Error("empty pin lists must encode as [], not null")
	}
}

func TestBuildErrors(t *testing.T) {
	t.Run("no dpkg database", func(t *testing.T) {
		root := writeTree(t, map[string]string{"/etc/ssh/sshd_config": "x\n"})
		_, err := Build(context.Background(), open(t, root), Options{})
		if err == nil || !strings.Contains(err.Error(), "/var/lib/dpkg/status") {
			t.Fatalf("err = %v, want one naming the dpkg database", err)
		}
	})
	t.Run("bad dpkg database", func(t *testing.T) {
		root := writeTree(t, map[string]string{"/var/lib/dpkg/status": "garbage line\n"})
		_, err := Build(context.Background(), open(t, root), Options{})
		if err == nil || !strings.Contains(err.Error(), "parsing /var/lib/dpkg/status") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("fifo config", func(t *testing.T) {
		root := writeTree(t, map[string]string{"/var/lib/dpkg/status": dpkgStatusText, "/etc/ssh/x": ""})
		if err := syscall.Mkfifo(filepath.Join(root, "etc/ssh/sshd_config"), 0o644); err != nil {
			t.Skip("mkfifo:", err)
		}
		_, err := Build(context.Background(), open(t, root), Options{})
		if err == nil || !strings.Contains(err.Error(), "sshd_config") {
			t.Fatalf("err = %v, want one naming sshd_config", err)
		}
	})
	t.Run("a name that forges a line", func(t *testing.T) {
		root := writeTree(t, map[string]string{"/var/lib/dpkg/status": dpkgStatusText})
		name := "x\nmanifest: all clear\x1b[2K"
		if err := os.MkdirAll(filepath.Join(root, "etc/sudoers.d"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(root, "etc/sudoers.d", name), 0o644); err != nil {
			t.Skip("mkfifo:", err)
		}
		_, err := Build(context.Background(), open(t, root), Options{})
		if err == nil || strings.ContainsAny(err.Error(), "\n\x1b") || !strings.Contains(err.Error(), `reading "/etc/sudoers.d/x\nmanifest: all clear\x1b[2K": `) {
			t.Fatalf("err = %q, want the name quoted and no line of its own", err)
		}
		if !errors.Is(err, sysroot.ErrNotRegular) {
			t.Errorf("err = %v, no longer says what was wrong", err)
		}
	})
	t.Run("escaping symlink", func(t *testing.T) {
		outside := writeTree(t, map[string]string{"/secret": "s\n"})
		root := writeTree(t, map[string]string{"/var/lib/dpkg/status": dpkgStatusText})
		if err := os.MkdirAll(filepath.Join(root, "etc/docker"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "etc/docker/daemon.json")); err != nil {
			t.Fatal(err)
		}
		m, err := Build(context.Background(), open(t, root), Options{})
		// Inside the root the absolute link resolves to a missing file.
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m.ConfigFiles {
			if f.Path == "/etc/docker/daemon.json" {
				t.Error("followed a link out of the root")
			}
		}
	})
}

func TestWriteAtomic(t *testing.T) {
	m, err := Build(context.Background(), open(t, sampleTree(t)), sampleOptions())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "manifest.json")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := m.Write(p); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil || doc["schema"] != Schema {
		t.Fatalf("written manifest: %v %v", err, doc["schema"])
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
	if err := m.Write(filepath.Join(dir, "missing", "m.json")); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

func TestDecodeRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"schema":   `{"schema":"other"}`,
		"unknown":  `{"schema":"gpuhost.manifest/v1","extra":1}`,
		"trailing": `{"schema":"gpuhost.manifest/v1"} {}`,
	} {
		if _, err := Decode([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestMatchesConfigFile(t *testing.T) {
	for name, want := range map[string]bool{
		"/etc/ssh/sshd_config":                true,
		"/etc/modprobe.d/nvidia.conf":         true,
		"/etc/modprobe.d/nvidia.txt":          false,
		"/etc/shadow":                         false,
		"/etc/sudoers.d/ops":                  true,
		"/etc/audit/audit.rules":              false,
		"/usr/share/keyrings/nvidia.gpg":      true,
		"/etc/containerd/conf.d/../../shadow": false,
		"/var/lib/dpkg/status":                false,
	} {
		if got := MatchesConfigFile(name); got != want {
			t.Errorf("MatchesConfigFile(%q) = %v", name, got)
		}
	}
}
