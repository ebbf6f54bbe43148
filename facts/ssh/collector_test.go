package ssh

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// gather runs Collect over dir as an offline rootfs, with no other
// collector's facts, and returns what it collected and its raw error.
func gather(t testing.TB, dir string) (*facts.Facts, map[string]error) {
	t.Helper()
	s, err := Collect(context.Background(), &collect.Env{FS: collecttest.OpenFS(t, dir)}, nil, nil)
	f := facts.New(facts.KindRootfs, "test", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	f.SSH = s
	return f, map[string]error{"ssh": err}
}

// golden compares the facts this package fills, under their document
// key, with testdata/golden/NAME.json.
func golden(t *testing.T, name, root string, f *facts.Facts) {
	t.Helper()
	collecttest.GoldenTree(t, name, root, map[string]any{"ssh": f.SSH}, *update)
}

func TestHardenedTree(t *testing.T) {
	root := filepath.Join("testdata", "hardened")
	f, errs := gather(t, root)
	for name, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	fsys := collecttest.OpenFS(t, root)
	ssh := f.SSH
	if ssh == nil {
		t.Fatal("ssh not filled")
	}
	if ssh.PermitRootLogin != "no" || ssh.PasswordAuthentication != "no" ||
		ssh.KbdInteractiveAuthentication != "no" || ssh.PermitEmptyPasswords != "no" {
		t.Errorf("ssh auth settings = %+v", ssh)
	}
	if want := []string{"chacha20-poly1305@openssh.com", "aes256-gcm@openssh.com", "aes128-gcm@openssh.com", "aes256-ctr"}; !slices.Equal(ssh.Ciphers, want) {
		t.Errorf("ciphers = %v, want %v", ssh.Ciphers, want)
	}
	if len(ssh.Files) != 3 || ssh.Files[2] != fsys.Display("/etc/ssh/sshd_config.d/90-gpuhost-hardening.conf") {
		t.Errorf("files = %v", ssh.Files)
	}
	for _, k := range []string{"permitrootlogin", "passwordauthentication", "ciphers", "kbdinteractiveauthentication"} {
		if !slices.Contains(ssh.Explicit, k) {
			t.Errorf("explicit %v lacks %s", ssh.Explicit, k)
		}
	}

	golden(t, "hardened", root, f)
}

func TestWeakTree(t *testing.T) {
	root := filepath.Join("testdata", "weak")
	f, errs := gather(t, root)
	for name, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	ssh := f.SSH
	if ssh.PermitRootLogin != "yes" || ssh.PasswordAuthentication != "yes" || ssh.KbdInteractiveAuthentication != "yes" {
		t.Errorf("ssh = %+v", ssh)
	}
	if !slices.Contains(ssh.Ciphers, "3des-cbc") || !slices.Contains(ssh.Ciphers, "aes128-cbc") {
		t.Errorf("ciphers = %v", ssh.Ciphers)
	}
	if !slices.Contains(ssh.KexAlgorithms, "diffie-hellman-group1-sha1") || !slices.Contains(ssh.KexAlgorithms, "curve25519-sha256") {
		t.Errorf("kex = %v: want the defaults plus the appended ones", ssh.KexAlgorithms)
	}
	if !slices.Contains(ssh.Explicit, "challengeresponseauthentication") {
		t.Errorf("explicit = %v", ssh.Explicit)
	}
	golden(t, "weak", root, f)
}

// An absolute symlink must resolve inside the root, or fail; it must never
// reach the host's own file.
func TestSymlinkToHostFile(t *testing.T) {
	hostData, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Skip("no /etc/passwd on this host to compare against")
	}
	hostFirst := strings.SplitN(string(hostData), "\n", 2)[0]
	for _, target := range []string{"/etc/passwd", "../../../../../../../../etc/passwd"} {
		dir := collecttest.TempTree(t, map[string]string{"/etc/passwd": "PermitRootLogin rootfs-own-value\n"})
		if err := os.MkdirAll(filepath.Join(dir, "etc", "ssh"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, "etc", "ssh", "sshd_config")); err != nil {
			t.Fatal(err)
		}
		f, errs := gather(t, dir)
		err := errs["ssh"]
		if err == nil {
			if f.SSH.PermitRootLogin != "rootfs-own-value" {
				t.Errorf("symlink to %s: read something other than the rootfs's file: %+v", target, f.SSH)
			}
			continue
		}
		if hostFirst != "" && strings.Contains(err.Error(), hostFirst) {
			t.Errorf("symlink to %s: error shows the host's file: %v", target, err)
		}
		if f.SSH != nil {
			t.Errorf("symlink to %s: facts filled despite error %v", target, err)
		}
	}
}

func TestHugeSparseSSHDConfig(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{"/etc/ssh/.keep": ""})
	p := filepath.Join(dir, "etc", "ssh", "sshd_config")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	_, errs := gather(t, dir)
	err = errs["ssh"]
	if !errors.Is(err, sysroot.ErrTooLarge) || collecttest.Status(err) != collect.StatusError || !strings.Contains(err.Error(), "sshd_config") {
		t.Errorf("100 MB sshd_config: %v, want a too-large error naming the file", err)
	}
}

// TestSSHHostPrivateKeyFiles lists the host private keys an image carries,
// named by a HostKey line or not, and not their public halves.
func TestSSHHostPrivateKeyFiles(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/ssh/sshd_config":                "HostKey /etc/ssh/ssh_host_ed25519_key\n",
		"/etc/ssh/ssh_host_ed25519_key":       "PRIVATE",
		"/etc/ssh/ssh_host_ed25519_key.pub":   "ssh-ed25519 AAAA",
		"/etc/ssh/ssh_host_rsa_key":           "PRIVATE",
		"/etc/ssh/ssh_host_rsa_key-cert.pub":  "cert",
		"/etc/ssh/sshd_config.d/keep.conf":    "",
		"/etc/ssh/not_a_host_key":             "",
		"/usr/share/doc/ssh/ssh_host_dsa_key": "",
	})
	f, errs := gather(t, dir)
	if errs["ssh"] != nil {
		t.Fatal(errs["ssh"])
	}
	if want := []string{"/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_rsa_key"}; !slices.Equal(f.SSH.HostPrivateKeyFiles, want) {
		t.Errorf("host private keys %v, want %v", f.SSH.HostPrivateKeyFiles, want)
	}
	clean := collecttest.TempTree(t, map[string]string{"/etc/ssh/sshd_config": "PermitRootLogin no\n"})
	f, errs = gather(t, clean)
	if errs["ssh"] != nil || len(f.SSH.HostPrivateKeyFiles) != 0 {
		t.Errorf("an image without keys: %v %v", f.SSH.HostPrivateKeyFiles, errs["ssh"])
	}
}

func TestEmptyRoot(t *testing.T) {
	f, errs := gather(t, t.TempDir())
	if s := collecttest.Status(errs["ssh"]); s != collect.StatusNotApplicable {
		t.Errorf("ssh status = %s (%v)", s, errs["ssh"])
	}
	if f.SSH != nil {
		t.Errorf("facts filled without files: %+v", f.SSH)
	}
}

func TestIncludeCycles(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/ssh/sshd_config": "Include a.conf\n",
		"/etc/ssh/a.conf":      "Include /etc/ssh/b.conf\n",
		"/etc/ssh/b.conf":      "Include a.conf\n",
	})
	if _, err := LoadSSHD(collecttest.OpenFS(t, dir), SSHDConfigPath); err == nil || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("sshd cycle: %v", err)
	}
}
