package images

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/zclconf/go-cty/cty"

	"github.com/gpuhost/gpuhost/builder/gate"
	"github.com/gpuhost/gpuhost/containers/seed"
	"github.com/gpuhost/gpuhost/containers/seed/seedtest"
	"github.com/gpuhost/gpuhost/containers/trivy"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/nvidiarepo"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/reports"
)

// ubuntuRelease is what a synthesized Ubuntu rootfs carries besides what
// the plan writes: the os-release, and the versions of the packages the
// plan installs without a pin, as the release's archive publishes them
// (the plan's pins carry their own). The CVE matching runs against the
// demo DB (Debian advisories), so these versions decide nothing there.
type ubuntuRelease struct {
	osRelease string
	versions  map[string]string
}

var ubuntuReleases = map[string]ubuntuRelease{
	"22.04": {
		osRelease: "PRETTY_NAME=\"Ubuntu 22.04.5 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\nVERSION=\"22.04.5 LTS (Jammy Jellyfish)\"\nVERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=jammy\n",
		versions: map[string]string{
			"containerd": "1.7.27-0ubuntu1~22.04.1", "openssh-server": "1:8.9p1-3ubuntu0.13", "openssh-client": "1:8.9p1-3ubuntu0.13", "passwd": "1:4.8.1-2ubuntu2.2",
			"nftables": "1.0.2-1ubuntu3", "auditd": "1:3.0.7-1build1", "sudo": "1.9.9-1ubuntu2.5",
			"libpam-google-authenticator": "20191231-2", "openssl": "3.0.2-0ubuntu1.19", "systemd": "249.11-0ubuntu3.16",
			"ca-certificates": "20240203~22.04.1", "dkms": "2.8.7-2ubuntu2.2", "linux-headers-5.15.0-153-generic": "5.15.0-153.163",
		},
	},
	"24.04": {
		osRelease: "PRETTY_NAME=\"Ubuntu 24.04.3 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"24.04\"\nVERSION=\"24.04.3 LTS (Noble Numbat)\"\nVERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=noble\n",
		versions: map[string]string{
			"containerd": "1.7.28-0ubuntu1~24.04.1", "openssh-server": "1:9.6p1-3ubuntu13.14", "openssh-client": "1:9.6p1-3ubuntu13.14", "passwd": "1:4.13+dfsg1-4ubuntu3.2",
			"nftables": "1.0.9-1build1", "auditd": "1:3.1.2-2.1build1.1", "sudo": "1.9.15p5-3ubuntu5.24.04.1",
			"libpam-google-authenticator": "20191231-2.1build1", "openssl": "3.0.13-0ubuntu3.6", "systemd": "255.4-1ubuntu8.11",
			"ca-certificates": "20240203", "dkms": "3.0.11-1ubuntu13", "linux-headers-6.8.0-45-generic": "6.8.0-45.45",
		},
	},
}

// ubuntuFiles are the files of Ubuntu's packages that the plan's steps
// read or edit, with Ubuntu's own contents where the plan edits them, and
// the units it enables or masks.
var ubuntuFiles = map[string]string{
	"/etc/ssh/sshd_config":       "Include /etc/ssh/sshd_config.d/*.conf\nKbdInteractiveAuthentication no\nUsePAM yes\nX11Forwarding yes\nPrintMotd no\nAcceptEnv LANG LC_*\nSubsystem\tsftp\t/usr/lib/openssh/sftp-server\n",
	"/etc/pam.d/sshd":            "@include common-auth\naccount    required     pam_nologin.so\n@include common-account\nsession [success=ok ignore=ignore module_unknown=ignore default=bad]        pam_selinux.so close\nsession    required     pam_loginuid.so\nsession    optional     pam_keyinit.so force revoke\n@include common-session\nsession    optional     pam_motd.so  motd=/run/motd.dynamic\nsession    optional     pam_mail.so standard noenv\nsession    required     pam_limits.so\nsession    required     pam_env.so\n@include common-password\n",
	"/etc/pam.d/common-auth":     "auth\t[success=1 default=ignore]\tpam_unix.so nullok\nauth\trequisite\t\t\tpam_deny.so\nauth\trequired\t\t\tpam_permit.so\n",
	"/etc/pam.d/common-account":  "account\t[success=1 new_authtok_reqd=done default=ignore]\tpam_unix.so\naccount\trequisite\t\t\tpam_deny.so\naccount\trequired\t\t\tpam_permit.so\n",
	"/etc/pam.d/common-session":  "session\t[default=1]\t\t\tpam_permit.so\nsession\trequisite\t\t\tpam_deny.so\nsession\trequired\t\t\tpam_permit.so\nsession\toptional\t\t\tpam_umask.so\nsession\trequired\tpam_unix.so\n",
	"/etc/pam.d/common-password": "password\t[success=1 default=ignore]\tpam_unix.so obscure yescrypt\npassword\trequisite\t\t\tpam_deny.so\npassword\trequired\t\t\tpam_permit.so\n",
	"/etc/ssl/openssl.cnf":       "HOME\t\t\t= .\nopenssl_conf = openssl_init\n\n[openssl_init]\nproviders = provider_sect\nssl_conf = ssl_sect\n\n[provider_sect]\ndefault = default_sect\n\n[default_sect]\n# activate = 1\n\n[ssl_sect]\nsystem_default = system_default_sect\n\n[system_default_sect]\nCipherString = DEFAULT:@SECLEVEL=2\n",
	"/etc/sudoers":               "Defaults\tenv_reset\nDefaults\tmail_badpass\nDefaults\tsecure_path=\"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/snap/bin\"\nDefaults\tuse_pty\nroot\tALL=(ALL:ALL) ALL\n%admin ALL=(ALL) ALL\n%sudo\tALL=(ALL:ALL) ALL\n@includedir /etc/sudoers.d\n",
	"/etc/audit/auditd.conf":     "local_events = yes\nwrite_logs = yes\nlog_file = /var/log/audit/audit.log\nlog_group = adm\nlog_format = ENRICHED\nflush = INCREMENTAL_ASYNC\nfreq = 50\nmax_log_file = 8\nnum_logs = 5\npriority_boost = 4\nname_format = NONE\nmax_log_file_action = ROTATE\nspace_left = 75\nspace_left_action = SYSLOG\naction_mail_acct = root\nadmin_space_left = 50\nadmin_space_left_action = SUSPEND\ndisk_full_action = SUSPEND\ndisk_error_action = SUSPEND\n",
	"/etc/default/grub":          "GRUB_DEFAULT=0\nGRUB_TIMEOUT_STYLE=hidden\nGRUB_TIMEOUT=0\nGRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"\"\n",
	"/etc/passwd":                "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nsshd:x:105:65534::/run/sshd:/usr/sbin/nologin\n",
	"/etc/group":                 "root:x:0:\ndaemon:x:1:\nadm:x:4:\nsudo:x:27:\nnogroup:x:65534:\n",
	"/etc/shadow":                "root:*:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\nnobody:*:19000:0:99999:7:::\nsshd:*:19000:0:99999:7:::\n",
	"/etc/gshadow":               "root:*::\ndaemon:*::\nadm:*::\nsudo:*::\nnogroup:*::\n",
	"/etc/login.defs":            "UMASK\t\t022\nSYS_GID_MIN\t\t100\nSYS_GID_MAX\t\t999\nGID_MIN\t\t\t1000\nGID_MAX\t\t\t60000\nENCRYPT_METHOD SHA512\n",
	"/etc/nsswitch.conf":         "passwd: files\ngroup: files\nshadow: files\ngshadow: files\nhosts: files dns\n",
	"/etc/hostname":              "build-host\n",
	"/etc/alternatives/awk":      "->/usr/bin/mawk",
	"/etc/alternatives/nawk":     "->/usr/bin/mawk",
	"/usr/lib/x86_64-linux-gnu/security/pam_google_authenticator.so": "stand-in\n",
	"/usr/sbin/auditd":                                    "#!/bin/sh\nexit 0\n",
	"/usr/bin/containerd":                                 "#!/bin/sh\necho 'containerd github.com/containerd/containerd CTRVERSION'\n",
	"/usr/bin/nvidia-container-runtime":                   "#!/bin/sh\nexit 0\n",
	"/usr/bin/nvidia-ctk":                                 nvidiarepo.NvidiaCTK(nvidiarepo.ToolkitVersions[0]),
	"/usr/lib/systemd/system/ssh.service":                 "[Unit]\nDescription=OpenBSD Secure Shell server\n[Service]\nExecStart=/usr/sbin/sshd -D\n[Install]\nWantedBy=multi-user.target\n",
	"/usr/lib/systemd/system/nftables.service":            "[Unit]\nDescription=nftables\n[Service]\nType=oneshot\nExecStart=/usr/sbin/nft -f /etc/nftables.conf\n[Install]\nWantedBy=sysinit.target\n",
	"/usr/lib/systemd/system/auditd.service":              "[Unit]\nDescription=Security Auditing Service\n[Service]\nType=forking\nExecStart=/sbin/auditd\n[Install]\nWantedBy=multi-user.target\n",
	"/usr/lib/systemd/system/containerd.service":          "[Unit]\nDescription=containerd container runtime\n[Service]\nExecStart=/usr/bin/containerd\n[Install]\nWantedBy=multi-user.target\n",
	"/usr/lib/systemd/system/nvidia-persistenced.service": "[Unit]\nDescription=NVIDIA Persistence Daemon\n[Service]\nType=forking\nExecStart=/usr/bin/nvidia-persistenced\n[Install]\nWantedBy=multi-user.target\n",
	"/usr/lib/systemd/system/unattended-upgrades.service": "[Unit]\nDescription=Unattended Upgrades Shutdown\n[Service]\nExecStart=/usr/share/unattended-upgrades/unattended-upgrade-shutdown\n[Install]\nWantedBy=multi-user.target\n",
	"/usr/lib/systemd/system/apt-daily.timer":             "[Unit]\nDescription=Daily apt download activities\n[Timer]\nOnCalendar=*-*-* 6,18:00\n[Install]\nWantedBy=timers.target\n",
	"/usr/lib/systemd/system/apt-daily-upgrade.timer":     "[Unit]\nDescription=Daily apt upgrade and clean activities\n[Timer]\nOnCalendar=*-*-* 6:00\n[Install]\nWantedBy=timers.target\n",
}

// planInstalls are the packages the plan's apt_install lines name, with
// the version each pins ("" for none), in plan order.
var planInstall = regexp.MustCompile(`(?m)^apt_install((?: '[^']+')+)$`)

func planInstalls(plan string) [][2]string {
	var out [][2]string
	for _, m := range planInstall.FindAllStringSubmatch(plan, -1) {
		for _, spec := range strings.Fields(strings.ReplaceAll(m[1], "'", "")) {
			name, version, _ := strings.Cut(spec, "=")
			out = append(out, [2]string{name, version})
		}
	}
	return out
}

// planHolds are the packages the plan's apt-mark hold lines name.
func planHolds(plan string) map[string]bool {
	held := map[string]bool{}
	for _, l := range strings.Split(plan, "\n") {
		if rest, ok := strings.CutPrefix(l, "apt-mark hold '"); ok {
			for _, n := range strings.Split(strings.TrimSuffix(rest, "'"), "' '") {
				held[n] = true
			}
		}
	}
	return held
}

// configSteps is the part of the plan that configures the installed
// packages: its preamble (the helpers, the trap, the policy-rc.d guard),
// then every step from containerd's configuration up to the pin checks,
// except the hardening's apt-get install, whose packages the synthesized
// tree already holds.
func configSteps(t *testing.T, plan string) string {
	t.Helper()
	first := strings.Index(plan, "\nstep \"")
	from := strings.Index(plan, "\nstep \"containerd config\"\n")
	to := strings.Index(plan, "\nstep \"verify pins\"\n")
	if first < 0 || from < 0 || to < from {
		t.Fatal("the plan has no containerd config step before its pin checks")
	}
	body := plan[from:to]
	pkgs := testutil.PlanStep(t, plan, "hardening: packages")
	body = strings.Replace(body, "\nstep \"hardening: packages\"\n"+pkgs, "", 1)
	return plan[:first] + body + "\nstep done\n"
}

// synthesize writes an Ubuntu rootfs the plan's installs would leave: the
// release's os-release and package files, a dpkg status with every
// package the plan installs at its pin (or the release's version), held
// where the plan holds it, and the kernel the template boots.
func synthesize(t *testing.T, root string, tp templatePlan) {
	t.Helper()
	rel, ok := ubuntuReleases[tp.cfg.Distro.VersionID]
	if !ok {
		t.Fatalf("no synthesized Ubuntu %q", tp.cfg.Distro.VersionID)
	}
	kernel := map[string]string{"22.04": "5.15.0-153-generic", "24.04": "6.8.0-45-generic"}[tp.cfg.Distro.VersionID]
	write := func(name, body string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(body, "->"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			return
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	// Ubuntu's merged /usr.
	for _, d := range []string{"bin", "sbin", "lib", "lib64"} {
		if err := os.MkdirAll(filepath.Join(root, "usr", d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("usr/"+d, filepath.Join(root, d)); err != nil {
			t.Fatal(err)
		}
	}
	// The directories the packages ship (systemd, kmod, apt, openssh-server,
	// sudo, auditd) besides those their files imply.
	for _, d := range []string{"tmp", "run", "root", "var/tmp", "var/log", "boot", "usr/lib/modules/" + kernel, "etc/systemd/system",
		"etc/modprobe.d", "etc/apt/preferences.d", "etc/ssh/sshd_config.d", "etc/sudoers.d", "etc/audit/rules.d"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("/usr/lib/os-release", rel.osRelease, 0o644)
	write("/etc/os-release", "->../usr/lib/os-release", 0)
	for name, body := range ubuntuFiles {
		mode := os.FileMode(0o644)
		if strings.HasPrefix(body, "#!") {
			mode = 0o755
		}
		if name == "/etc/shadow" || name == "/etc/gshadow" {
			mode = 0o640
		}
		if name == "/etc/sudoers" {
			mode = 0o440
		}
		write(name, strings.ReplaceAll(body, "CTRVERSION", strings.SplitN(rel.versions["containerd"], "-", 2)[0]), mode)
	}
	write("/boot/vmlinuz-"+kernel, "stand-in kernel\n", 0o600)

	held := planHolds(tp.plan)
	// What the plan installs, what it pins (the CUDA set's toolkit is
	// installed through the set it resolves against NVIDIA's repository,
	// which a synthesized tree has not: the set is the toolkit alone), and
	// what the bootstrap brought that the plan's steps run.
	installs := planInstalls(tp.plan)
	for _, p := range tp.cfg.Pins() {
		installs = append(installs, [2]string{p.Name, p.Version})
	}
	installs = append(installs, [2]string{"linux-image-" + kernel, ""}, [2]string{"openssh-client", ""}, [2]string{"systemd", ""})
	var status, pamList strings.Builder
	seen := map[string]bool{}
	for _, p := range installs {
		name, version := p[0], p[1]
		if seen[name] {
			continue
		}
		seen[name] = true
		if version == "" {
			version = rel.versions[name]
		}
		switch {
		case version != "":
		case strings.HasPrefix(name, "linux-image-"):
			version = rel.versions["linux-headers-"+kernel]
		case strings.HasPrefix(name, "nvidia-driver-pinning-"):
			// Its name carries the driver's version; NVIDIA builds it at it.
			version = tp.cfg.Driver.Version
		}
		if version == "" {
			t.Fatalf("the plan installs %s, which the synthesized Ubuntu %s has no version of: add it to ubuntuReleases", name, tp.cfg.Distro.VersionID)
		}
		want := "install"
		if held[name] {
			want = "hold"
		}
		fmt.Fprintf(&status, "Package: %s\nStatus: %s ok installed\nPriority: optional\nArchitecture: amd64\nVersion: %s\n\n", name, want, version)
		if name == "libpam-google-authenticator" {
			pamList.WriteString("/usr/lib/x86_64-linux-gnu/security/pam_google_authenticator.so\n")
		}
	}
	for name := range held {
		if !seen[name] {
			t.Errorf("the plan holds %s, which it never installs", name)
		}
	}
	write("/var/lib/dpkg/status", status.String(), 0o644)
	write("/var/lib/dpkg/info/libpam-google-authenticator.list", pamList.String(), 0o644)
}

// applyPlan runs the plan's configuration steps in a chroot of root in a
// mount namespace of their own: root's /usr is an overlay on the build
// machine's, so the steps run the real sshd -T, nft -c, visudo, groupadd
// and systemctl, while what they write (and the package files synthesize
// put in /usr) lands in root alone.
func applyPlan(t *testing.T, root, script string) string {
	t.Helper()
	unshare := testutil.Tool(t, "unshare", "util-linux")
	for _, tool := range [][2]string{{"sshd", "openssh-server"}, {"nft", "nftables"}, {"visudo", "sudo"}, {"systemctl", "systemd"}, {"ssh-keygen", "openssh-client"}, {"groupadd", "passwd"}} {
		testutil.Tool(t, tool[0], tool[1])
	}
	view, work := t.TempDir(), t.TempDir()
	for _, d := range []string{"usr", "etc", "var", "boot", "root", "lib", "tmp", "run", "dev", "proc"} {
		if err := os.MkdirAll(filepath.Join(view, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"bin", "sbin", "lib64"} {
		if err := os.Symlink("usr/"+l, filepath.Join(view, l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(view, "lib")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("usr/lib", filepath.Join(view, "lib")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "root", "gpuhost-plan.sh"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(filepath.Join(root, "root", "gpuhost-plan.sh"))
	if err := os.MkdirAll(filepath.Join(work, "ovl"), 0o755); err != nil {
		t.Fatal(err)
	}
	mounts := `set -eu
mount --make-rprivate /
mount -t overlay overlay -o "lowerdir=/usr,upperdir=$1/usr,workdir=$3/ovl" "$2/usr"
for d in etc var boot root; do mount --bind "$1/$d" "$2/$d"; done
mount -t tmpfs tmpfs "$2/tmp"
mount -t tmpfs tmpfs "$2/run"
mount --rbind /dev "$2/dev"
mount -t proc proc "$2/proc"
exec chroot "$2" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root /bin/sh /root/gpuhost-plan.sh`
	return testutil.Run(t, 2*time.Minute, unshare, "--mount", "--pid", "--fork", "/bin/sh", "-c", mounts, "sh", root, view, work)
}

// TestUbuntuTemplatesPassTheirGate covers the one part of the Ubuntu bake
// that TestE2EUbuntuStandInBake cannot: the plan's configuration and
// hardening steps run on Ubuntu's own default files (sshd_config, PAM's
// common-* files, sudoers, auditd.conf, openssl.cnf), where the stand-in
// archive carries Debian's. It renders each Ubuntu template's plan,
// synthesizes the tree its installs leave (the package database is
// written from the plan's install list, so the pins and holds prove
// nothing here: the stand-in bake proves those through apt), runs those
// steps on it, writes the manifest and SBOM as the provisioner does, and
// judges the tree with the template's own gpuhost-gate block through the
// gate itself: it must pass, waiving nothing.
func TestUbuntuTemplatesPassTheirGate(t *testing.T) {
	testutil.Root(t)
	db := t.TempDir()
	fx, err := trivy.ReadFixture("trivy-db-demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := trivy.WriteDB(db, fx); err != nil {
		t.Fatal(err)
	}
	for _, tpl := range []string{"ubuntu-22.04-gpu.pkr.hcl", "ubuntu-24.04-gpu.pkr.hcl"} {
		t.Run(tpl, func(t *testing.T) {
			withDB := func(v map[string]cty.Value) { v["trivy_db"] = cty.StringVal(db) }
			tp, err := renderTemplateWith(t, tpl, withDB, nil)
			if err != nil {
				t.Fatal(err)
			}
			// The NGC base the provisioner pre-seeds, pulled as it pulls
			// it (by the pinned digest, every blob verified) from a
			// registry standing in for NGC, under its own name.
			reg := seedtest.New(t)
			digests := map[string]string{}
			for _, img := range tp.cfg.NGCImages {
				repo, tag, _ := strings.Cut(strings.TrimPrefix(img.Ref, "nvcr.io/"), ":")
				base := seedtest.Base(t, seedtest.Distro{ID: "ubuntu", VersionID: strings.TrimSuffix(strings.TrimPrefix(tpl, "ubuntu-"), "-gpu.pkr.hcl"), Packages: []string{"base-files 13ubuntu10", "libc6 2.35-0ubuntu3.8"}})
				reg.Write(t, repo, tag, base)
				digests[img.Ref] = seedtest.Digest(t, base)
			}
			if tp, err = renderTemplateWith(t, tpl, withDB, digests); err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(t.TempDir(), "rootfs")
			synthesize(t, root, tp)
			diskRoot(t, root)
			layout, err := seed.OpenLayout(filepath.Join(root, "var/lib/gpuhost/images"))
			if err != nil {
				t.Fatal(err)
			}
			var pulled []*seed.Pulled
			for _, img := range tp.cfg.NGCImages {
				p, err := layout.Pull(context.Background(), img.Ref, img.PinnedDigest(), seed.Options{Registry: reg.Host})
				if err != nil {
					t.Fatal(err)
				}
				pulled = append(pulled, p)
			}
			if err := layout.WriteIndex(pulled); err != nil {
				t.Fatal(err)
			}
			out := applyPlan(t, root, configSteps(t, tp.plan))
			if !strings.Contains(out, "==> gpuhost-gpu step: hardening: journald") {
				t.Fatalf("the plan's steps did not all run:\n%s", out)
			}

			// The manifest and SBOM, as the provisioner writes them.
			fsys, closer, err := sysroot.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			m, err := manifest.Build(context.Background(), fsys, tp.cfg.ManifestOptions(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			if err != nil {
				t.Fatal(err)
			}
			data, err := m.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			bom, err := trivy.SBOMFS(context.Background(), fsys)
			closer.Close()
			if err != nil {
				t.Fatal(err)
			}
			for name, body := range map[string][]byte{manifest.Path: data, packages.SBOMPath: bom} {
				p := filepath.Join(root, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, body, 0o644); err != nil {
					t.Fatal(err)
				}
			}

			// The template's own gate block, through the gate.
			if tp.gate == nil {
				t.Fatal("the template has no gpuhost-gate post-processor")
			}
			pp := &gate.PostProcessor{SBOM: trivy.SBOM, Vulnerabilities: trivy.VulnerabilitiesCollector}
			val, diags := hcldec.Decode(tp.gate.Body, hcldec.ObjectSpec(pp.ConfigSpec()), tp.ctx)
			if diags.HasErrors() {
				t.Fatalf("decoding the gpuhost-gate block: %s", diags.Error())
			}
			if err := pp.Configure(val); err != nil {
				t.Fatal(err)
			}
			ui := &packersdk.MockUi{}
			_, _, _, err = pp.PostProcess(context.Background(), ui, &rootfsArtifact{dir: root})
			said := ui.SayMessages
			var log strings.Builder
			for _, m := range said {
				log.WriteString(m.Message + "\n")
			}
			var rep reports.Report
			if data, err := os.ReadFile(root + ".gate.json"); err != nil {
				t.Fatal(err)
			} else if err := json.Unmarshal(data, &rep); err != nil {
				t.Fatal(err)
			}
			if err != nil {
				for _, r := range rep.Results {
					if r.Status == reports.StatusFail || r.Status == reports.StatusError || (r.Status == reports.StatusSkip && r.Severity == "critical") {
						fmt.Fprintf(&log, "%s %s %s: %s\n", r.Status, r.Severity, r.ID, strings.Join(r.Messages, "; "))
					}
				}
				t.Fatalf("the gate refuses the image: %v\n%s", err, log.String())
			}
			var waived []string
			for _, r := range rep.Results {
				if r.Status == reports.StatusWaived {
					waived = append(waived, r.ID)
				}
			}
			slices.Sort(waived)
			if len(waived) != 0 {
				t.Errorf("waived %v; want none: the templates' waivers files are empty", waived)
			}
			t.Logf("%s passes its gate at fail_on = high:\n%s", tpl, log.String())
		})
	}
}

// diskRoot writes what the rootfs builder writes into the tree of a disk
// with a LUKS2 root (encryption.luks2): crypttab opening the volume and
// fstab mounting / from its mapping, by a made-up UUID here. The
// encryption is the builder's, not the plan's; TestE2EUbuntuStandInBake
// bakes and boots the real disk.
func diskRoot(t *testing.T, root string) {
	t.Helper()
	const uuid = "0b5c3f7e-2a41-4c6e-9d8f-1e2a3b4c5d6e"
	files := map[string]string{
		"etc/crypttab": "luks-" + uuid + " UUID=" + uuid + " none luks,discard,x-initrd.attach,tpm2-device=auto,try-empty-password=yes\n",
		"etc/fstab":    "/dev/mapper/luks-" + uuid + " / ext4 errors=remount-ro 0 1\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// rootfsArtifact is what the rootfs builder hands the gate when it keeps
// the tree: the directory, in its state.
type rootfsArtifact struct{ dir string }

func (a *rootfsArtifact) BuilderId() string { return "gpuhost.rootfs" }
func (a *rootfsArtifact) Files() []string   { return nil }
func (a *rootfsArtifact) Id() string        { return a.dir }
func (a *rootfsArtifact) String() string    { return a.dir }
func (a *rootfsArtifact) Destroy() error    { return nil }
func (a *rootfsArtifact) State(name string) interface{} {
	if name == "rootfs" {
		return a.dir
	}
	return nil
}
