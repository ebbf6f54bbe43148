package main

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/reports"
)

// ssgDataStream is ComplianceAsCode's Ubuntu 22.04 content as Debian's
// ssg-debderived installs it (make deps).
const ssgDataStream = "/usr/share/xml/scap/ssg/content/ssg-ubuntu2204-ds.xml"

// openSCAPDisagrees lists the rules where gpuhost's verdict differs from
// OpenSCAP's on the trees below, each with why; docs/compliance.md has the
// same list. A disagreement not listed here fails the test: either gpuhost
// is wrong, or the reason belongs here and in the docs.
var openSCAPDisagrees = map[string]string{
	"package_chrony_installed":        "gpuhost takes chrony or ntp, as the CIS benchmark's text does; the content asks for chrony alone",
	"package_iptables_installed":      dpkgInChroot,
	"package_rsyslog_installed":       dpkgInChroot,
	"package_sudo_installed":          dpkgInChroot,
	"service_chronyd_or_ntpd_enabled": systemdInChroot,
	"service_cron_enabled":            systemdInChroot,
	"service_rsyslog_enabled":         systemdInChroot,
	"sshd_disable_root_login": "with PermitRootLogin unset, OpenSSH's default (prohibit-password) lets root in with a key, which " +
		"gpuhost fails; the content's check passes a file that does not set it",
	"sshd_use_approved_ciphers": "the content wants a Ciphers line listing its algorithms; gpuhost judges what sshd offers, " +
		"which passes when nothing weak is offered, whether by default or by a shorter list",
	"sshd_use_approved_macs": "the content wants a MACs line listing its algorithms; gpuhost judges what sshd offers, " +
		"which passes when nothing weak is offered",
	"sshd_set_idle_timeout":       sshdAsRun,
	"sshd_set_max_auth_tries":     sshdAsRun,
	"sshd_disable_x11_forwarding": sshdAsRun,
	"sudo_custom_logfile": "the content's pattern does not take a quoted path (Defaults logfile=\"/var/log/sudo.log\"), " +
		"which sudo reads as the same setting",
}

// Why OpenSCAP's probes judge something other than the tree in a chroot.
const (
	sshdAsRun = "OpenSCAP passes the default tree, whose sshd runs with MaxAuthTries 6, ClientAliveInterval 0 and " +
		"X11Forwarding yes (as sshd -T prints them for its files); gpuhost judges those effective values, which " +
		"facts/ssh's live tests hold to sshd -T, and fails them"
	dpkgInChroot = "under oscap-chroot, OpenSCAP's dpkginfo probe does not read the tree's dpkg database: it finds " +
		"none of the packages the tree lists as installed"
	systemdInChroot = "OpenSCAP asks the running systemd over D-Bus whether a unit is enabled, which in a chroot " +
		"is the scanning machine's (or none), not the tree's wants links"
)

// TestProfilesAgreeWithOpenSCAP runs OpenSCAP (oscap-chroot, the CIS Ubuntu
// 22.04 Level 1 and 2 Server profiles of ComplianceAsCode) and gpuhost
// (scan rootfs --compliance) on the same Ubuntu-shaped trees, a default one
// and a partly hardened one, and compares them rule by rule: of the rules
// OpenSCAP judges (pass or fail), how many gpuhost judges too (coverage),
// and of those, on how many they agree. It logs both figures per tree and
// profile, and fails on any disagreement openSCAPDisagrees does not
// explain, or on coverage below the floor it holds.
func TestProfilesAgreeWithOpenSCAP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OpenSCAP over whole profiles; not in -short")
	}
	oscap, err := exec.LookPath("oscap-chroot")
	if err != nil {
		t.Skip("oscap-chroot is not installed; make deps installs openscap-utils")
	}
	if _, err := os.Stat(ssgDataStream); err != nil {
		t.Skipf("ComplianceAsCode's content is not installed (%v); make deps installs ssg-debderived", err)
	}
	for _, tree := range []struct {
		name     string
		hardened bool
	}{{"default", false}, {"hardened", true}} {
		dir := ubuntuTree(t, tree.hardened)
		for _, p := range []struct{ name, xccdf string }{
			{"cis-ubuntu-22.04-l1-server", "xccdf_org.ssgproject.content_profile_cis_level1_server"},
			{"cis-ubuntu-22.04-l2-server", "xccdf_org.ssgproject.content_profile_cis_level2_server"},
		} {
			t.Run(tree.name+"/"+p.name, func(t *testing.T) {
				theirs := openSCAPResults(t, oscap, dir, p.xccdf)
				o := gpuhost(t, "", "scan", "rootfs", dir, "--compliance", p.name, "--format", "json", "--fail-on", "none")
				if o.code != 0 {
					t.Fatalf("scan: exit %d\n%s", o.code, o.stderr)
				}
				ours := map[string]string{}
				for _, c := range jsonReport(t, o).Compliance.Controls {
					for _, r := range c.Rules {
						ours[r.ID] = r.Status
					}
				}
				judged, covered, agreed := 0, 0, 0
				var unexplained []string
				for rule, res := range theirs {
					if res != "pass" && res != "fail" {
						continue
					}
					judged++
					mine := ours[rule]
					if mine != reports.ControlPass && mine != reports.ControlFail {
						continue
					}
					covered++
					if mine == res {
						agreed++
						continue
					}
					why, ok := openSCAPDisagrees[rule]
					if !ok {
						unexplained = append(unexplained, fmt.Sprintf("%s: OpenSCAP %s, gpuhost %s", rule, res, mine))
						continue
					}
					t.Logf("known disagreement %s: OpenSCAP %s, gpuhost %s: %s", rule, res, mine, why)
				}
				slices.Sort(unexplained)
				t.Logf("%s tree, %s: OpenSCAP judges %d rules; gpuhost judges %d of them (%.0f%%) and agrees on %d of those (%.0f%%)",
					tree.name, p.name, judged, covered, pct(covered, judged), agreed, pct(agreed, covered))
				for _, u := range unexplained {
					t.Errorf("unexplained disagreement: %s", u)
				}
				if covered == 0 {
					t.Errorf("gpuhost judges none of the rules OpenSCAP judges")
				}
			})
		}
	}
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// openSCAPResults evaluates a whole profile over dir and returns each
// rule's result by its short id.
func openSCAPResults(t *testing.T, oscap, dir, profile string) map[string]string {
	t.Helper()
	results := filepath.Join(t.TempDir(), "results.xml")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, oscap, dir, "xccdf", "eval", "--profile", profile, "--results", results, ssgDataStream)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	// oscap exits 2 when a rule fails: that is a result, not an error.
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 2) {
		t.Fatalf("oscap-chroot %s: %v\n%s", dir, err, out)
	}
	return ruleResultsIn(t, results)
}

// ruleResultsIn reads an XCCDF results file: each rule's result by its
// short ComplianceAsCode id.
func ruleResultsIn(t *testing.T, results string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []struct {
			IDRef  string `xml:"idref,attr"`
			Result string `xml:"result"`
		} `xml:"TestResult>rule-result"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("parsing %s: %v", results, err)
	}
	got := map[string]string{}
	for _, r := range doc.Results {
		got[strings.TrimPrefix(r.IDRef, "xccdf_org.ssgproject.content_rule_")] = r.Result
	}
	return got
}

// ubuntuTree writes an Ubuntu 22.04 server tree of the shape a minbase
// install with openssh-server, sudo, rsyslog, cron, auditd and chrony has,
// as far as either tool reads it; hardened applies part of the benchmark
// (modules, sysctls, file modes, sshd, sudo).
func ubuntuTree(t *testing.T, hardened bool) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]treeFile{
		"etc/os-release":  {data: "PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\nVERSION=\"22.04.4 LTS (Jammy Jellyfish)\"\nVERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=jammy\n"},
		"etc/lsb-release": {data: "DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=22.04\nDISTRIB_CODENAME=jammy\nDISTRIB_DESCRIPTION=\"Ubuntu 22.04.4 LTS\"\n"},
		"etc/passwd": {data: "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\nbin:x:2:2:bin:/bin:/usr/sbin/nologin\n" +
			"sys:x:3:3:sys:/dev:/usr/sbin/nologin\nsync:x:4:65534:sync:/bin:/bin/sync\nsyslog:x:104:110::/home/syslog:/usr/sbin/nologin\n" +
			"_chrony:x:105:112:Chrony daemon,,,:/var/lib/chrony:/usr/sbin/nologin\nsshd:x:106:65534::/run/sshd:/usr/sbin/nologin\n" +
			"ubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"},
		"etc/group": {data: "root:x:0:\ndaemon:x:1:\nbin:x:2:\nsys:x:3:\nadm:x:4:syslog,ubuntu\nsudo:x:27:ubuntu\nshadow:x:42:\n" +
			"syslog:x:110:\n_chrony:x:112:\nubuntu:x:1000:\nnogroup:x:65534:\n"},
		"etc/shadow": {mode: 0o640, gid: 42, data: "root:*:19700:0:99999:7:::\ndaemon:*:19700:0:99999:7:::\nbin:*:19700:0:99999:7:::\n" +
			"sys:*:19700:0:99999:7:::\nsync:*:19700:0:99999:7:::\nsyslog:*:19700:0:99999:7:::\n_chrony:*:19700:0:99999:7:::\n" +
			"sshd:*:19700:0:99999:7:::\nubuntu:$6$salt$hash:19700:0:99999:7:::\nnobody:*:19700:0:99999:7:::\n"},
		"etc/gshadow":                   {mode: 0o640, gid: 42, data: "root:*::\nadm:*::syslog,ubuntu\nsudo:*::ubuntu\nshadow:*::\nubuntu:!::\n"},
		"etc/passwd-":                   {data: "root:x:0:0:root:/root:/bin/bash\n"},
		"etc/group-":                    {data: "root:x:0:\n"},
		"etc/shadow-":                   {mode: 0o640, gid: 42, data: "root:*:19700:0:99999:7:::\n"},
		"etc/gshadow-":                  {mode: 0o640, gid: 42, data: "root:*::\n"},
		"etc/hostname":                  {data: "ubuntu\n"},
		"etc/login.defs":                {data: "UMASK\t022\nPASS_MAX_DAYS\t99999\nPASS_MIN_DAYS\t0\nPASS_WARN_AGE\t7\nENCRYPT_METHOD SHA512\n"},
		"etc/issue":                     {data: "Ubuntu 22.04.4 LTS \\n \\l\n"},
		"etc/issue.net":                 {data: "Ubuntu 22.04.4 LTS\n"},
		"etc/crontab":                   {data: "SHELL=/bin/sh\n17 * * * * root cd / && run-parts --report /etc/cron.hourly\n"},
		"etc/cron.d/":                   {mode: 0o755},
		"etc/cron.daily/":               {mode: 0o755},
		"etc/cron.hourly/":              {mode: 0o755},
		"etc/cron.weekly/":              {mode: 0o755},
		"etc/cron.monthly/":             {mode: 0o755},
		"etc/ssh/sshd_config":           {data: "Include /etc/ssh/sshd_config.d/*.conf\nKbdInteractiveAuthentication no\nUsePAM yes\nX11Forwarding yes\nPrintMotd no\nAcceptEnv LANG LC_*\nSubsystem sftp /usr/lib/openssh/sftp-server\n"},
		"etc/ssh/sshd_config.d/":        {mode: 0o755},
		"etc/sudoers":                   {mode: 0o440, data: "Defaults env_reset\nDefaults mail_badpass\nroot ALL=(ALL:ALL) ALL\n%sudo ALL=(ALL:ALL) ALL\n@includedir /etc/sudoers.d\n"},
		"etc/sudoers.d/":                {mode: 0o750},
		"etc/modprobe.d/":               {mode: 0o755},
		"etc/sysctl.d/":                 {mode: 0o755},
		"etc/default/grub":              {data: "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"\"\n"},
		"boot/grub/grub.cfg":            {mode: 0o444, data: "set default=0\nmenuentry 'Ubuntu' {\n\tlinux /boot/vmlinuz root=/dev/sda1 ro quiet splash\n}\n"},
		"etc/fstab":                     {data: "/dev/sda1 / ext4 defaults 0 1\n"},
		"etc/rsyslog.conf":              {data: "module(load=\"imuxsock\")\n$FileCreateMode 0640\n*.* /var/log/syslog\n"},
		"etc/chrony/chrony.conf":        {data: "pool ntp.ubuntu.com iburst maxsources 4\ndriftfile /var/lib/chrony/chrony.drift\n"},
		"etc/audit/auditd.conf":         {data: "log_file = /var/log/audit/audit.log\nmax_log_file = 8\nmax_log_file_action = ROTATE\nspace_left_action = SYSLOG\nadmin_space_left_action = SUSPEND\n"},
		"etc/audit/rules.d/audit.rules": {data: "-D\n-b 8192\n"},
		"var/lib/dpkg/status":           {data: ubuntuPackages()},
		"home/ubuntu/":                  {mode: 0o750, uid: 1000, gid: 1000},
		"home/ubuntu/.bashrc":           {uid: 1000, gid: 1000, data: "# ~/.bashrc\n"},
		"root/":                         {mode: 0o700},
		"tmp/":                          {mode: 0o1777},
		"var/tmp/":                      {mode: 0o1777},
	}
	for _, unit := range []string{"ssh", "rsyslog", "cron", "auditd", "chrony"} {
		files["etc/systemd/system/multi-user.target.wants/"+unit+".service"] = treeFile{link: "/lib/systemd/system/" + unit + ".service"}
		files["lib/systemd/system/"+unit+".service"] = treeFile{data: "[Unit]\nDescription=" + unit + "\n[Install]\nWantedBy=multi-user.target\n"}
	}
	if hardened {
		var mods strings.Builder
		for _, m := range []string{"cramfs", "freevxfs", "jffs2", "hfs", "hfsplus", "udf", "usb-storage", "dccp", "rds", "sctp", "tipc"} {
			fmt.Fprintf(&mods, "install %s /bin/false\nblacklist %s\n", m, m)
		}
		files["etc/modprobe.d/cis.conf"] = treeFile{data: mods.String()}
		files["etc/sysctl.d/60-cis.conf"] = treeFile{data: "kernel.randomize_va_space = 2\nfs.suid_dumpable = 0\n" +
			"net.ipv4.conf.all.send_redirects = 0\nnet.ipv4.conf.default.send_redirects = 0\nnet.ipv4.conf.all.accept_redirects = 0\n" +
			"net.ipv4.conf.default.accept_redirects = 0\nnet.ipv4.conf.all.secure_redirects = 0\nnet.ipv4.conf.default.secure_redirects = 0\n" +
			"net.ipv4.conf.all.log_martians = 1\nnet.ipv4.conf.default.log_martians = 1\nnet.ipv4.icmp_echo_ignore_broadcasts = 1\n" +
			"net.ipv4.icmp_ignore_bogus_error_responses = 1\nnet.ipv4.conf.all.rp_filter = 1\nnet.ipv4.conf.default.rp_filter = 1\n" +
			"net.ipv4.tcp_syncookies = 1\nnet.ipv4.conf.all.accept_source_route = 0\nnet.ipv4.conf.default.accept_source_route = 0\n" +
			"net.ipv6.conf.all.accept_ra = 0\nnet.ipv6.conf.default.accept_ra = 0\nnet.ipv6.conf.all.accept_redirects = 0\n" +
			"net.ipv6.conf.default.accept_redirects = 0\nnet.ipv6.conf.all.accept_source_route = 0\nnet.ipv6.conf.default.accept_source_route = 0\n" +
			"net.ipv4.ip_forward = 0\nnet.ipv6.conf.all.forwarding = 0\n"}
		files["etc/security/limits.d/cis.conf"] = treeFile{data: "* hard core 0\n"}
		files["etc/ssh/sshd_config.d/50-cis.conf"] = treeFile{mode: 0o600, data: "PermitRootLogin no\nPermitEmptyPasswords no\nHostbasedAuthentication no\n" +
			"IgnoreRhosts yes\nPermitUserEnvironment no\nLogLevel INFO\nMaxAuthTries 4\nMaxSessions 10\nClientAliveInterval 300\n" +
			"ClientAliveCountMax 0\nX11Forwarding no\nAllowTcpForwarding no\nCiphers aes256-gcm@openssh.com,aes128-gcm@openssh.com,aes256-ctr,aes192-ctr,aes128-ctr\n" +
			"MACs hmac-sha2-512-etm@openssh.com,hmac-sha2-256-etm@openssh.com,hmac-sha2-512,hmac-sha2-256\n"}
		files["etc/ssh/sshd_config"] = treeFile{mode: 0o600, data: files["etc/ssh/sshd_config"].data}
		files["etc/crontab"] = treeFile{mode: 0o600, data: files["etc/crontab"].data}
		for _, d := range []string{"etc/cron.d/", "etc/cron.daily/", "etc/cron.hourly/", "etc/cron.weekly/", "etc/cron.monthly/"} {
			files[d] = treeFile{mode: 0o700}
		}
		files["etc/cron.allow"] = treeFile{mode: 0o640, data: "root\n"}
		files["etc/at.allow"] = treeFile{mode: 0o640, data: "root\n"}
		files["boot/grub/grub.cfg"] = treeFile{mode: 0o400, data: files["boot/grub/grub.cfg"].data}
		files["etc/sudoers.d/50-cis"] = treeFile{mode: 0o440, data: "Defaults use_pty\nDefaults logfile=\"/var/log/sudo.log\"\n"}
	}
	writeTree(t, dir, files)
	return dir
}

// treeFile is one entry of a test tree: a directory when its name ends in
// "/", a symbolic link when link is set, else a file.
type treeFile struct {
	data     string
	mode     os.FileMode
	uid, gid int
	link     string
}

func writeTree(t *testing.T, dir string, files map[string]treeFile) {
	t.Helper()
	root := os.Geteuid() == 0
	for name, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(name, "/")))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case f.link != "":
			err = os.Symlink(f.link, p)
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(p, 0o755)
		default:
			err = os.WriteFile(p, []byte(f.data), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		if f.link != "" {
			continue
		}
		if f.mode != 0 {
			mode := f.mode.Perm() | f.mode&os.ModeSticky
			if f.mode&0o1000 != 0 {
				mode |= os.ModeSticky
			}
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
		}
		// Owners need root; without it the tree is the user's, which both
		// tools judge alike.
		if root && (f.uid != 0 || f.gid != 0) {
			if err := os.Lchown(p, f.uid, f.gid); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// ubuntuPackages is a dpkg status database of the packages the tree says
// it has.
func ubuntuPackages() string {
	var b strings.Builder
	for _, p := range [][2]string{
		{"base-files", "12ubuntu4.6"}, {"openssh-server", "1:8.9p1-3ubuntu0.10"}, {"openssh-client", "1:8.9p1-3ubuntu0.10"},
		{"sudo", "1.9.9-1ubuntu2.4"}, {"rsyslog", "8.2112.0-2ubuntu2.2"}, {"cron", "3.0pl1-137ubuntu3"},
		{"auditd", "1:3.0.7-1build1"}, {"chrony", "4.2-2ubuntu2"}, {"systemd", "249.11-0ubuntu3.12"}, {"iptables", "1.8.7-1ubuntu5.2"},
	} {
		fmt.Fprintf(&b, "Package: %s\nStatus: install ok installed\nPriority: optional\nArchitecture: amd64\nVersion: %s\nDescription: %s\n\n", p[0], p[1], p[0])
	}
	return b.String()
}

// TestTailoringFileRunsInOpenSCAP: the gpu-container-host profile written
// as an XCCDF tailoring file passes oscap's schema and, given to
// oscap xccdf eval, leaves out exactly the tailored controls' rules.
func TestTailoringFileRunsInOpenSCAP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OpenSCAP over a whole profile; not in -short")
	}
	oscap, err := exec.LookPath("oscap-chroot")
	if err != nil {
		t.Skip("oscap-chroot is not installed; make deps installs openscap-utils")
	}
	if _, err := os.Stat(ssgDataStream); err != nil {
		t.Skipf("ComplianceAsCode's content is not installed (%v); make deps installs ssg-debderived", err)
	}
	o := gpuhost(t, "", "compliance", "tailoring", "gpu-container-host")
	if o.code != 0 {
		t.Fatalf("compliance tailoring: exit %d\n%s", o.code, o.stderr)
	}
	file := filepath.Join(t.TempDir(), "tailoring.xml")
	if err := os.WriteFile(file, []byte(o.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("oscap", "xccdf", "validate", "--skip-schematron", file).CombinedOutput(); err != nil {
		t.Fatalf("oscap xccdf validate: %v\n%s", err, out)
	}
	dir := ubuntuTree(t, true)
	results := filepath.Join(t.TempDir(), "results.xml")
	cmd := exec.Command(oscap, dir, "xccdf", "eval", "--tailoring-file", file, "--profile", "xccdf_dev.gpuhost_profile_gpu-container-host",
		"--results", results, ssgDataStream)
	cmd.Dir = t.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("oscap-chroot xccdf eval --tailoring-file: %v\n%s", err, out)
		}
	}
	evaluated := 0
	for rule, result := range ruleResultsIn(t, results) {
		tailored := rule == "sysctl_net_ipv4_ip_forward" || rule == "sysctl_net_ipv6_conf_all_forwarding" || rule == "package_xorg-x11-server-common_removed"
		switch {
		case tailored && result != "notselected":
			t.Errorf("%s is tailored out, but OpenSCAP says %s", rule, result)
		case !tailored && result != "notselected":
			evaluated++
		}
	}
	if evaluated != 189-3 {
		t.Errorf("OpenSCAP evaluated %d rules with the tailoring; want Level 1's 189 less the 3 tailored", evaluated)
	}
}
