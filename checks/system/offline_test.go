package system

import (
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/checks/facts"
)

const ubuntuDpkg = `Package: systemd
Status: install ok installed
Priority: important
Architecture: amd64
Version: 249.11-0ubuntu3.12
Description: system and service manager
 systemd is a system and service manager for Linux.
 .
 It provides aggressive parallelization.

Package: nvidia-driver-535-server
Status: hold ok installed
Architecture: amd64
Version: 535.183.01-0ubuntu0.22.04.1

Package: libc6
Status: install ok installed
Architecture: i386
Version: 2.35-0ubuntu3.8

Package: libc6
Status: install ok installed
Architecture: amd64
Version: 2.35-0ubuntu3.8

Package: old-removed
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0

Package: half
Status: install ok half-configured
Architecture: amd64
Version: 1.0
`

// ubuntuImage is a GPU image rootfs as the provisioner leaves it.
func ubuntuImage() map[string]any {
	return map[string]any{
		"usr/lib/os-release": `PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=jammy
`,
		"etc/os-release":                              symlink("../usr/lib/os-release"),
		"etc/hostname":                                "gpu-node-01\n",
		"lib/modules/5.15.0-9-generic/":               nil,
		"lib/modules/5.15.0-105-generic/":             nil,
		"lib/modules/5.15.0-91-generic/":              nil,
		"lib/modules/not-a-dir":                       "x",
		"etc/default/grub":                            "GRUB_DEFAULT=0\nGRUB_TIMEOUT=0\nGRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"\"\n",
		"etc/default/grub.d/50-cloudimg-settings.cfg": "# Cloud Image specific Grub settings\nGRUB_CMDLINE_LINUX_DEFAULT=\"console=tty1 console=ttyS0 nvme_core.io_timeout=4294967295\"\nGRUB_TIMEOUT=0\n",
		"etc/default/grub.d/60-gpuhost.cfg":           "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX systemd.unified_cgroup_hierarchy=1\"\n",
		"var/lib/dpkg/status":                         ubuntuDpkg,
		"etc/crypttab":                                "# <target name> <source device> <key file> <options>\ncryptswap /dev/disk/by-partuuid/1234 /dev/urandom swap,cipher=aes-xts-plain64,size=256\ndata UUID=0d3c-77 none luks,discard\n",
		"etc/fstab":                                   "# /etc/fstab\nLABEL=cloudimg-rootfs\t/\text4\tdiscard,errors=remount-ro\t0 1\nLABEL=UEFI\t/boot/efi\tvfat\tumask=0077\t0 1\n/dev/mapper/cryptswap none swap sw 0 0\n/swap\\040file none swap sw 0 0\n",
		"etc/ufw/ufw.conf":                            "# /etc/ufw/ufw.conf\nENABLED=yes\nLOGLEVEL=low\n",
		"etc/default/ufw":                             "IPV6=yes\nDEFAULT_INPUT_POLICY=\"DROP\"\nDEFAULT_OUTPUT_POLICY=\"ACCEPT\"\n",
		"etc/ufw/user.rules": `*filter
:ufw-user-input - [0:0]
### RULES ###

### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 in
-A ufw-user-input -p tcp --dport 22 -j ACCEPT

### tuple ### limit tcp 443 0.0.0.0/0 any 0.0.0.0/0 in
-A ufw-user-input -p tcp --dport 443 -j ufw-user-limit-accept

### tuple ### allow udp 6000:6002 0.0.0.0/0 any 0.0.0.0/0 in_eth0
### tuple ### deny tcp 25 0.0.0.0/0 any 0.0.0.0/0 in
-A ufw-user-input -p tcp --dport 25 -j DROP
### tuple ### allow any any 0.0.0.0/0 any 10.0.0.0/8 in
### tuple ### allow tcp 8080 0.0.0.0/0 any 0.0.0.0/0 out
COMMIT
`,
		"etc/ufw/user6.rules": "-A ufw6-user-input -p tcp -m multiport --dports 9100,9400 -j ACCEPT\n",
		"etc/systemd/system/multi-user.target.wants/nvidia-persistenced.service": symlink("/lib/systemd/system/nvidia-persistenced.service"),
		"etc/systemd/system/multi-user.target.wants/ssh.service":                 symlink("/lib/systemd/system/ssh.service"),
		"etc/systemd/system/timers.target.wants/gpuhost-agent.timer":             symlink("/etc/systemd/system/gpuhost-agent.timer"),
		"etc/systemd/system/sockets.target.wants/README":                         "not a unit",
		"etc/systemd/system/unattended-upgrades.service":                         symlink("/dev/null"),
		"etc/systemd/system/apt-daily.timer":                                     symlink("/dev/null"),
		"etc/systemd/system/gpuhost-agent.timer":                                 "[Timer]\nOnCalendar=hourly\n",
		"etc/systemd/system/other.service":                                       symlink("/lib/systemd/system/other.service"),
		"usr/lib/systemd/system/sysinit.target.wants/vendor.service":             symlink("../vendor.service"),
		"etc/gpuhost/manifest.json":                                              `{"schema":"gpuhost.manifest/v1","pins":{"driver":"535.183.01"},"size":12345678901234567890}`,
	}
}

func TestOfflineImageGolden(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, ubuntuImage())
	env := newEnv(t, dir, false)
	f := newFacts(facts.KindRootfs)
	collect(t, env, f)
	for _, name := range []string{"os", "kernel", "packages", "cgroup", "encryption", "firewall", "systemd", "manifest"} {
		wantStatus(t, f, name, facts.StatusOK)
	}
	wantStatus(t, f, "network", facts.StatusNotApplicable)
	wantStatus(t, f, "tls_probe", facts.StatusNotApplicable)

	// The facts a policy leans on, spelled out so a wrong golden cannot
	// hide them.
	if f.Target.Hostname != "gpu-node-01" {
		t.Errorf("hostname %q", f.Target.Hostname)
	}
	if f.Kernel.Release != "5.15.0-105-generic" {
		t.Errorf("release %q, want the newest by Debian order", f.Kernel.Release)
	}
	if want := "console=tty1 console=ttyS0 nvme_core.io_timeout=4294967295"; !strings.Contains(strings.Join(f.Kernel.Cmdline, " "), want) {
		t.Errorf("cmdline %q lacks the cloud image drop-in", f.Kernel.Cmdline)
	}
	if f.Cgroup.Version != 2 || !strings.Contains(f.Cgroup.Source, "unified_cgroup_hierarchy=1") {
		t.Errorf("cgroup %+v", f.Cgroup)
	}
	if p, ok := Installed(f.Packages, "nvidia-driver-535-server"); !ok || !p.Held {
		t.Errorf("driver package %+v %v, want held", p, ok)
	}
	if _, ok := Installed(f.Packages, "old-removed"); ok {
		t.Error("a deinstalled package is listed")
	}
	if f.Network.Listening != nil {
		t.Errorf("offline Listening = %v, want nil", f.Network.Listening)
	}
	if fw := f.Network.Firewall; fw.Backend != "ufw" || !fw.Enabled || fw.DefaultInputPolicy != "drop" {
		t.Errorf("firewall %+v", fw)
	}
	if f.Systemd.Version != 249 {
		t.Errorf("systemd version %d", f.Systemd.Version)
	}
	golden(t, "offline_ubuntu.json", f)
}

func TestGrubDropinOverridesInLexicalOrder(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]any{
		"etc/default/grub":          "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nif [ -n \"$X\" ]; then\n  GRUB_TERMINAL=console\nfi\n",
		"etc/default/grub.d/20.cfg": "GRUB_CMDLINE_LINUX_DEFAULT=\"${GRUB_CMDLINE_LINUX_DEFAULT} b\"\n",
		"etc/default/grub.d/10.cfg": "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT a\"\n",
		"etc/default/grub.d/30.txt": "GRUB_CMDLINE_LINUX_DEFAULT=ignored\n",
	})
	f := newFacts(facts.KindRootfs)
	if err := collectOne(t, newEnv(t, dir, false), f, "kernel"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Kernel.Cmdline, " "); got != "quiet a b" {
		t.Errorf("cmdline %q, want %q", got, "quiet a b")
	}
	if f.Kernel.Cmdline == nil || f.Kernel.Installed != nil {
		t.Errorf("kernel %+v", f.Kernel)
	}
	if want := "/etc/default/grub, /etc/default/grub.d/10.cfg, /etc/default/grub.d/20.cfg"; f.Kernel.CmdlineSource != want {
		t.Errorf("source %q, want %q", f.Kernel.CmdlineSource, want)
	}
}

func TestCmdlineSourcePrecedence(t *testing.T) {
	grub := "GRUB_CMDLINE_LINUX=\"from=grub\"\n"
	entries := map[string]any{
		"boot/loader/entries/b.conf": "title B\noptions from=b\n",
		"boot/loader/entries/a.conf": "title A\nlinux /vmlinuz\noptions root=UUID=1 ro\noptions quiet \"x=a b\"\n",
	}
	for _, tc := range []struct {
		name      string
		tree      map[string]any
		want, src string
	}{
		{"kernel-install", map[string]any{"etc/kernel/cmdline": "root=/dev/vda1 rw\n", "etc/default/grub": grub}, "root=/dev/vda1 rw", "/etc/kernel/cmdline"},
		{"loader entries", merge(entries, map[string]any{"etc/default/grub": grub}), "root=UUID=1 ro quiet x=a b", "/boot/loader/entries/a.conf"},
		{"grub", map[string]any{"etc/default/grub": grub}, "from=grub", "/etc/default/grub"},
		{"nothing", map[string]any{"etc/": nil}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.tree)
			cmd, src, err := configuredCmdline(newEnv(t, dir, false).FS)
			if err != nil {
				t.Fatal(err)
			}
			if cmd == nil || strings.Join(cmd, " ") != tc.want || src != tc.src {
				t.Errorf("got %q from %q, want %q from %q", cmd, src, tc.want, tc.src)
			}
		})
	}
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func TestOSReleaseFallbackAndErrors(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]any{
		// A dangling link: the fallback is read.
		"etc/os-release":     symlink("/usr/lib/os-release.gone"),
		"usr/lib/os-release": "ID=debian\nVERSION_ID=\"12\"\nVERSION_CODENAME=bookworm\nPRETTY_NAME='Debian GNU/Linux 12 (bookworm)'\n",
		"etc/hostname":       "bad\x01host\n",
	})
	f := newFacts(facts.KindRootfs)
	if err := collectOne(t, newEnv(t, dir, false), f, "os"); err != nil {
		t.Fatal(err)
	}
	want := facts.OS{ID: "debian", VersionID: "12", Codename: "bookworm", PrettyName: "Debian GNU/Linux 12 (bookworm)"}
	if *f.OS != want {
		t.Errorf("os %+v, want %+v", *f.OS, want)
	}
	if f.Target.Hostname != "" {
		t.Errorf("hostname with a control character accepted: %q", f.Target.Hostname)
	}

	empty := t.TempDir()
	err := collectOne(t, newEnv(t, empty, false), newFacts(facts.KindRootfs), "os")
	if err == nil || !strings.Contains(err.Error(), "/etc/os-release") || !strings.Contains(err.Error(), "/usr/lib/os-release") {
		t.Errorf("missing os-release: %v, want an error naming both paths", err)
	}
}

func TestOSReleaseQuoting(t *testing.T) {
	o, err := parseOSRelease([]byte(`ID=ubuntu
PRETTY_NAME="Say \"hi\" \$HOME \\ ok"
UBUNTU_CODENAME=noble
VERSION_ID=24.04 # trailing comment
`))
	if err != nil {
		t.Fatal(err)
	}
	if o.PrettyName != `Say "hi" $HOME \ ok` || o.Codename != "noble" || o.VersionID != "24.04" {
		t.Errorf("%+v", o)
	}
	if _, err := parseOSRelease([]byte("ID=\"unterminated\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("unterminated quote: %v", err)
	}
}
