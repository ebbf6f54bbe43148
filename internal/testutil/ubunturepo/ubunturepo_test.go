package ubunturepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// e2eArchive builds (or finds in the cache) the archive the end-to-end
// tests share, or skips: the first build downloads Debian's packages, and
// apt runs as root.
func e2eArchive(t *testing.T, serve bool) (*Archive, string) {
	t.Helper()
	if os.Getenv("GPUHOST_E2E") != "1" {
		t.Skip("builds the Ubuntu stand-in archive from Debian's packages: set GPUHOST_E2E=1 (make e2e); needs root and the Debian mirror")
	}
	testutil.Root(t)
	for _, tool := range [][2]string{{"apt-get", "apt"}, {"dpkg-deb", "dpkg"}, {"gpg", "gpg"}, {"gpgconf", "gpgconf"}, {"xz", "xz-utils"}} {
		testutil.Tool(t, tool[0], tool[1])
	}
	o := Options{Cache: cacheDir()}
	start := time.Now()
	var a *Archive
	var base string
	if serve {
		a, base = Start(t, o)
	} else {
		a = Build(t, o)
	}
	t.Logf("archive ready in %s: %s", time.Since(start).Round(time.Millisecond), a.Root)
	return a, base
}

// cacheDir is where TestE2EUbuntuStandInBake keeps the archive too (beside
// the Debian bake's apt cache), so that make e2e builds it once.
func cacheDir() string {
	if d := os.Getenv("GPUHOST_E2E_UBUNTU_CACHE"); d != "" {
		return d
	}
	apt := os.Getenv("GPUHOST_E2E_APT_CACHE")
	if apt == "" {
		apt = filepath.Join(os.TempDir(), "gpuhost-e2e-apt-cache")
	}
	return apt + "-ubuntu-archive"
}

// keyPackages are the packages whose published versions a bootstrapped
// tree must carry.
var keyPackages = []string{"base-files", "sudo", "openssh-server", "openssh-client", "openssh-sftp-server", "systemd", "libsystemd0",
	"libssl3", "openssl", "passwd", "login", "ca-certificates", "containerd", "nftables", "auditd", "libaudit1", "curl", "ubuntu-keyring"}

// TestE2EMmdebstrapBootstrapsUbuntu bootstraps jammy and noble from the
// served archive with mmdebstrap, as the rootfs builder does, and reads
// the tree: Ubuntu's os-release and sudoers, the published versions,
// Debian's sshd_config with its Include and PAM's common-* files made by
// the packages' maintainer scripts, and apt inside the tree verifying the
// archive (its -updates too) with the key ubuntu-keyring installed.
func TestE2EMmdebstrapBootstrapsUbuntu(t *testing.T) {
	a, base := e2eArchive(t, true)
	testutil.Tool(t, "mmdebstrap", "mmdebstrap")
	for _, suite := range []string{"jammy", "noble"} {
		t.Run(suite, func(t *testing.T) {
			// Side by side: much of a bootstrap is one dpkg process.
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "rootfs")
			start := time.Now()
			include := "systemd,ca-certificates,openssh-server,sudo,passwd,openssl,curl,gpg,containerd,nftables,auditd,libpam-google-authenticator"
			out, err := exec.Command("mmdebstrap", "--mode=root", "--variant=minbase", "--components=main,restricted,universe",
				"--include="+include, "--keyring="+a.Keyring, "--skip=cleanup/apt/lists", suite, dir, base).CombinedOutput()
			if err != nil {
				t.Fatalf("mmdebstrap: %v\n%s", err, tail(out))
			}
			t.Logf("mmdebstrap %s in %s", suite, time.Since(start).Round(time.Millisecond))
			checkTree(t, a, suite, dir)
			checkAptInTree(t, a, suite, dir, base)
		})
	}
}

func checkTree(t *testing.T, a *Archive, suite, dir string) {
	t.Helper()
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Errorf("reading %s: %v", p, err)
		}
		return string(b)
	}
	if got, err := os.Readlink(filepath.Join(dir, "etc/os-release")); err != nil || got != "../usr/lib/os-release" {
		t.Errorf("/etc/os-release links to %q (%v), want ../usr/lib/os-release", got, err)
	}
	if got := read("usr/lib/os-release"); got != OSRelease(suite) {
		t.Errorf("os-release is\n%s\nwant\n%s", got, OSRelease(suite))
	}
	for file, want := range map[string]string{
		"etc/lsb-release":                               "DISTRIB_CODENAME=" + suite + "\n",
		"etc/sudoers":                                   "%admin ALL=(ALL) ALL\n",
		"etc/ssh/sshd_config":                           "Include /etc/ssh/sshd_config.d/*.conf\n",
		"etc/pam.d/common-auth":                         "pam_unix.so nullok",
		"etc/pam.d/common-password":                     "pam_unix.so obscure yescrypt",
		"etc/audit/auditd.conf":                         "log_file = /var/log/audit/audit.log\n",
		"etc/containerd/config.toml":                    "",
		"etc/apt/sources.list":                          " " + suite + " main restricted universe",
		"usr/share/keyrings/ubuntu-archive-keyring.gpg": "",
	} {
		if got := read(file); !strings.Contains(got, want) {
			t.Errorf("/%s does not contain %q:\n%s", file, want, got)
		}
	}
	if got, err := os.Readlink(filepath.Join(dir, "etc/dpkg/origins/default")); err != nil || got != "ubuntu" {
		t.Errorf("dpkg's default origin is %q (%v), want ubuntu", got, err)
	}
	out, err := exec.Command("dpkg-query", "--admindir="+filepath.Join(dir, "var/lib/dpkg"), "-W", "-f=${Package} ${Version}\n").Output()
	if err != nil {
		t.Fatalf("dpkg-query: %v", err)
	}
	installed := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, v, _ := strings.Cut(l, " ")
		installed[name] = v
	}
	if _, ok := installed["debian-archive-keyring"]; ok {
		t.Error("debian-archive-keyring is installed beside ubuntu-keyring")
	}
	for _, p := range keyPackages {
		want := a.Versions[suite][p]
		if want == "" || installed[p] != want {
			t.Errorf("%s is installed at %q, published at %q", p, installed[p], want)
		}
	}
	for p, v := range installed {
		if want := a.Versions[suite][p]; v != want {
			t.Errorf("%s is installed at %s, but %s publishes %q", p, v, suite, want)
		}
	}
	t.Logf("%s: %d packages; %s", suite, len(installed), versionsOf(installed, "base-files", "openssh-server", "sudo", "systemd", "libssl3", "containerd"))
}

func versionsOf(m map[string]string, names ...string) string {
	var b []string
	for _, n := range names {
		b = append(b, n+" "+m[n])
	}
	return strings.Join(b, ", ")
}

// checkAptInTree runs apt inside the tree: update must verify every
// index against the key ubuntu-keyring installed, with -updates added;
// the updates become the candidates, and what the builder and the plan
// install later (the kernel's meta packages, GRUB's images, DKMS, the
// encrypted root's tools) resolves.
func checkAptInTree(t *testing.T, a *Archive, suite, dir, base string) {
	t.Helper()
	list := "deb " + base + " " + suite + "-updates main restricted universe\ndeb " + base + " " + suite + "-security main restricted universe\n"
	if err := os.WriteFile(filepath.Join(dir, "etc/apt/sources.list.d/updates.list"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	chroot := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("chroot", append([]string{dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, tail(out))
		}
		return string(out)
	}
	// Without ubuntu-keyring's link apt must refuse the archive: the tree
	// trusts it through its own key, not through anything mmdebstrap
	// brought from the build machine.
	link := filepath.Join(dir, "etc/apt/trusted.gpg.d/ubuntu-keyring-2018-archive.gpg")
	if target, err := os.Readlink(link); err != nil || target != KeyringPath {
		t.Fatalf("ubuntu-keyring's trusted.gpg.d link is %q (%v), want %s", target, err, KeyringPath)
	}
	lists := filepath.Join(dir, "var/lib/apt/lists")
	for _, step := range []func() error{
		func() error { return os.RemoveAll(lists) },
		func() error { return os.MkdirAll(filepath.Join(lists, "partial"), 0o755) },
		func() error { return os.Remove(link) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("chroot", dir, "apt-get", "update").CombinedOutput(); err == nil && !strings.Contains(string(out), "NO_PUBKEY") {
		t.Errorf("apt-get update in the tree accepted the archive without ubuntu-keyring's key:\n%s", out)
	}
	if err := os.Symlink(KeyringPath, link); err != nil {
		t.Fatal(err)
	}
	out := chroot("apt-get", "update")
	if strings.Contains(out, "W: ") || strings.Contains(out, "E: ") || !strings.Contains(out, "Get:") {
		t.Errorf("apt-get update in the tree warns or fetches nothing:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "etc/apt/sources.list")); err != nil || strings.Contains(string(b), "signed-by") {
		t.Errorf("the tree's sources.list names a key of the build machine (%v):\n%s", err, b)
	}
	for _, p := range updated {
		want := a.Versions[suite+"-updates"][p]
		if out := chroot("apt-cache", "policy", p); want == "" || !strings.Contains(out, "Candidate: "+want+"\n") {
			t.Errorf("%s's candidate is not the update %q:\n%s", p, want, out)
		}
	}
	out = chroot("apt-get", "install", "-s", "--no-install-recommends", "linux-image-generic", "linux-headers-generic", "dkms",
		"grub-efi-amd64-bin", "grub-pc-bin", "initramfs-tools")
	for _, want := range []string{"Inst linux-image-" + a.Kernel + " ", "Inst linux-headers-" + a.Kernel + " ", "Inst linux-image-generic (" + a.Versions[suite]["linux-image-generic"] + " "} {
		if !strings.Contains(out, want) {
			t.Errorf("installing the kernel's meta packages does not %q:\n%s", want, out)
		}
	}
	chroot("apt-get", "install", "-s", "--no-install-recommends", "linux-image-generic", "cryptsetup-bin", "dracut", "tpm2-tools")
}

func tail(b []byte) string {
	const max = 6000
	if len(b) > max {
		return "..." + string(b[len(b)-max:])
	}
	return string(b)
}
