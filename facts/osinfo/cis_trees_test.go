package osinfo_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/target"
	"github.com/gpuhost/gpuhost/target/collector"
	"github.com/gpuhost/gpuhost/target/domains"
)

// The ComplianceAsCode rules of the CIS Ubuntu 22.04 server profiles
// (Level 1, and Level 2's network modules) that the kernel checks answer,
// each with the check and the finding subject that says its verdict.
type cisRule struct{ id, check, subject string }

// cisRules maps every rule to its check and subject: what a profile pastes.
var cisRules = func() []cisRule {
	var rs []cisRule
	for _, m := range []string{"cramfs", "freevxfs", "hfs", "hfsplus", "jffs2", "udf", "usb-storage", "dccp", "rds", "sctp", "tipc"} {
		rs = append(rs, cisRule{"kernel_module_" + m + "_disabled", "GH-KRN-001", m})
	}
	for _, key := range slices.Sorted(maps.Keys(cisSysctl)) {
		rs = append(rs, cisRule{"sysctl_" + strings.ReplaceAll(key, ".", "_"), "GH-KRN-002", key})
	}
	return append(rs,
		cisRule{"disable_users_coredumps", "GH-KRN-003", "* hard core"},
		cisRule{"disable_prelink", "GH-KRN-004", "prelink"})
}()

// cisSysctl are the benchmark's kernel parameters, as params.default.yaml
// holds them.
var cisSysctl = map[string]string{
	"fs.suid_dumpable":                           "0",
	"kernel.randomize_va_space":                  "2",
	"net.ipv4.conf.all.accept_redirects":         "0",
	"net.ipv4.conf.all.accept_source_route":      "0",
	"net.ipv4.conf.all.log_martians":             "1",
	"net.ipv4.conf.all.rp_filter":                "1",
	"net.ipv4.conf.all.secure_redirects":         "0",
	"net.ipv4.conf.all.send_redirects":           "0",
	"net.ipv4.conf.default.accept_redirects":     "0",
	"net.ipv4.conf.default.accept_source_route":  "0",
	"net.ipv4.conf.default.log_martians":         "1",
	"net.ipv4.conf.default.rp_filter":            "1",
	"net.ipv4.conf.default.secure_redirects":     "0",
	"net.ipv4.conf.default.send_redirects":       "0",
	"net.ipv4.icmp_echo_ignore_broadcasts":       "1",
	"net.ipv4.icmp_ignore_bogus_error_responses": "1",
	"net.ipv4.ip_forward":                        "0",
	"net.ipv4.tcp_syncookies":                    "1",
	"net.ipv6.conf.all.accept_ra":                "0",
	"net.ipv6.conf.all.accept_redirects":         "0",
	"net.ipv6.conf.all.accept_source_route":      "0",
	"net.ipv6.conf.all.forwarding":               "0",
	"net.ipv6.conf.default.accept_ra":            "0",
	"net.ipv6.conf.default.accept_redirects":     "0",
	"net.ipv6.conf.default.accept_source_route":  "0",
}

// ubuntuBase is an Ubuntu-22.04-shaped tree as installed: merged /usr,
// os-release and lsb-release (OpenSCAP's platform test reads the latter),
// PAM and procps in the dpkg database, systemd's and procps' sysctl.d files
// (procps sets rp_filter to 2), Debian's 99-sysctl.conf link, kmod's own
// modprobe.d files and pam_limits' commented template.
func ubuntuBase() map[string]any {
	return map[string]any{
		"lib":             collecttest.Symlink("usr/lib"),
		"etc/os-release":  "NAME=\"Ubuntu\"\nVERSION=\"22.04.4 LTS (Jammy Jellyfish)\"\nID=ubuntu\nID_LIKE=debian\nVERSION_ID=\"22.04\"\nVERSION_CODENAME=jammy\n",
		"etc/lsb-release": "DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=22.04\nDISTRIB_CODENAME=jammy\nDISTRIB_DESCRIPTION=\"Ubuntu 22.04.4 LTS\"\n",
		"var/lib/dpkg/status": dpkgEntry("libpam-runtime", "1.4.0-11ubuntu2.4", "all") +
			dpkgEntry("procps", "2:3.3.17-6ubuntu2.1", "amd64") + dpkgEntry("kmod", "29-1ubuntu1", "amd64"),
		"usr/lib/sysctl.d/50-default.conf": "# systemd\nkernel.core_uses_pid = 1\n" +
			"net.ipv4.conf.default.accept_source_route = 0\nnet.ipv4.conf.*.accept_source_route = 0\n-net.ipv4.conf.all.accept_source_route\n" +
			"fs.protected_hardlinks = 1\nfs.protected_symlinks = 1\n",
		"etc/sysctl.d/10-network-security.conf": "# Turn on Source Address Verification in all interfaces to\n# prevent some spoofing attacks.\nnet.ipv4.conf.default.rp_filter=2\nnet.ipv4.conf.all.rp_filter=2\n",
		"etc/sysctl.d/10-kernel-hardening.conf": "kernel.kptr_restrict = 1\n",
		"etc/sysctl.d/99-sysctl.conf":           collecttest.Symlink("../sysctl.conf"),
		"etc/sysctl.conf":                       "#net.ipv4.ip_forward=1\n#net.ipv4.conf.all.accept_redirects = 0\n",
		"usr/lib/modprobe.d/aliases.conf":       "alias net-pf-3 off\nalias net-pf-6 off\n",
		"etc/modprobe.d/blacklist.conf":         "# This file lists those modules which we don't want to be loaded by\n# alias expansion, usually so some other driver will be loaded for the\n# device instead.\nblacklist evbug\n",
		"etc/security/limits.conf":              "#<domain>      <type>  <item>         <value>\n#\n#*               soft    core            0\n#root            hard    core            100000\n",
	}
}

func dpkgEntry(name, version, arch string) string {
	return "Package: " + name + "\nStatus: install ok installed\nPriority: required\nArchitecture: " + arch +
		"\nVersion: " + version + "\nDescription: " + name + "\n\n"
}

// cisHardened is the base with the benchmark's settings in files of their
// own, and procps' rp_filter lines commented out, as ComplianceAsCode's
// remediation leaves them.
func cisHardened() map[string]any {
	t := ubuntuBase()
	var sysctl strings.Builder
	for _, k := range slices.Sorted(maps.Keys(cisSysctl)) {
		sysctl.WriteString(k + " = " + cisSysctl[k] + "\n")
	}
	t["etc/sysctl.d/60-cis.conf"] = sysctl.String()
	t["etc/sysctl.d/10-network-security.conf"] = "#net.ipv4.conf.default.rp_filter=2\n#net.ipv4.conf.all.rp_filter=2\n"
	var modprobe strings.Builder
	for _, r := range cisRules {
		if r.check == "GH-KRN-001" {
			modprobe.WriteString("install " + r.subject + " /bin/false\nblacklist " + r.subject + "\n")
		}
	}
	t["etc/modprobe.d/cis.conf"] = modprobe.String()
	t["etc/security/limits.conf"] = "#*               soft    core            0\n*               hard    core            0\n"
	return t
}

// cisMixed gets some settings right and some wrong, among them the cases
// where gpuhost and OpenSCAP part ways (cisDisagreements).
func cisMixed() map[string]any {
	t := ubuntuBase()
	t["var/lib/dpkg/status"] = t["var/lib/dpkg/status"].(string) + dpkgEntry("prelink", "0.0.20131005-1", "amd64")
	t["etc/modprobe.d/cis.conf"] = "install cramfs /bin/false\nblacklist freevxfs\ninstall udf /bin/false # CIS 1.1.1.6\n" +
		"install usb_storage /bin/true\ninstall dccp /bin/false\ninstall rds /bin/false\n"
	t["usr/lib/modprobe.d/50-vendor.conf"] = "install hfs /bin/true\n"
	t["usr/lib/modprobe.d/60-hfs.conf"] = "install hfsplus /bin/false\n"
	t["etc/modprobe.d/60-hfs.conf"] = "blacklist hfsplus\n"
	t["usr/lib/modprobe.d/jffs2.conf"] = "install jffs2 /bin/false\n"
	t["etc/modprobe.d/jffs2.conf"] = collecttest.Symlink("/dev/null")
	t["etc/modprobe.d/10-rds.conf"] = "install rds /sbin/modprobe --ignore-install rds\n"
	t["run/modprobe.d/tipc.conf"] = "install tipc /bin/true\n"
	t["etc/sysctl.conf"] = "#net.ipv4.ip_forward=1\nfs.suid_dumpable = 0\n"
	t["etc/sysctl.d/60-cis.conf"] = "kernel.randomize_va_space = 1\n" +
		"net/ipv4/conf/all/accept_redirects = 0\n" +
		"net.ipv4.conf.*.log_martians = 1\n" +
		"net.ipv4.conf.default.log_martians = 1\n" +
		"net.ipv4.conf.all.rp_filter = 1\n" +
		"net.ipv4.conf.default.accept_redirects = 0\n" +
		"net.ipv4.conf.default.send_redirects = 0\n" +
		"net.ipv4.icmp_echo_ignore_broadcasts = 1\n" +
		"-net.ipv4.icmp_ignore_bogus_error_responses = 1\n" +
		"net.ipv4.ip_forward = 1\n" +
		"net.ipv4.tcp_syncookies = 01\n" +
		"net.ipv6.conf.all.accept_ra = 0\nnet.ipv6.conf.all.accept_source_route = 0\nnet.ipv6.conf.all.forwarding = 0\n" +
		"net.ipv6.conf.default.accept_ra = 0\nnet.ipv6.conf.default.accept_redirects = 0\nnet.ipv6.conf.default.accept_source_route = 0\n"
	t["etc/sysctl.d/99-k8s.conf"] = "net.ipv6.conf.all.forwarding = 1\n"
	t["run/sysctl.d/60-run.conf"] = "net.ipv4.conf.all.secure_redirects = 0\n"
	t["usr/local/lib/sysctl.d/60-local.conf"] = "net.ipv4.conf.all.send_redirects = 1\n"
	t["usr/lib/sysctl.d/60-vendor.conf"] = "net.ipv4.conf.default.secure_redirects = 0\n"
	t["etc/sysctl.d/60-vendor.conf"] = "# emptied by the admin\n"
	t["etc/security/limits.conf"] = "*               hard    core            0\n"
	t["etc/security/limits.d/90-dev.conf"] = "*               hard    core            unlimited\n"
	return t
}

// cisTrees are the trees the kernel checks and OpenSCAP both judge.
var cisTrees = map[string]func() map[string]any{"stock": ubuntuBase, "hardened": cisHardened, "mixed": cisMixed}

// cisFailing are, for each tree, the rules whose subject gpuhost fails;
// every other rule passes.
var cisFailing = map[string][]string{
	"stock": func() []string {
		var ids []string
		for _, r := range cisRules {
			if r.id != "sysctl_net_ipv4_conf_default_accept_source_route" && r.id != "disable_prelink" {
				ids = append(ids, r.id)
			}
		}
		return ids
	}(),
	"hardened": nil,
	"mixed": {
		"kernel_module_freevxfs_disabled", "kernel_module_hfsplus_disabled", "kernel_module_jffs2_disabled",
		"kernel_module_udf_disabled", "kernel_module_rds_disabled", "kernel_module_sctp_disabled",
		"sysctl_kernel_randomize_va_space", "sysctl_net_ipv4_conf_all_accept_source_route",
		"sysctl_net_ipv4_conf_default_rp_filter", "sysctl_net_ipv4_conf_all_send_redirects",
		"sysctl_net_ipv4_conf_default_secure_redirects", "sysctl_net_ipv4_ip_forward",
		"sysctl_net_ipv6_conf_all_accept_redirects", "sysctl_net_ipv6_conf_all_forwarding",
		"disable_users_coredumps", "disable_prelink",
	},
}

// kernelCollectors are the collectors the kernel checks read.
func kernelCollectors() []collector.Collector {
	var cs []collector.Collector
	for _, c := range domains.Collectors() {
		if slices.Contains([]string{"os", "packages", "kernel_modules", "sysctl", "limits"}, c.Name()) {
			cs = append(cs, c)
		}
	}
	return cs
}

// collectTree collects the kernel checks' facts from a tree, as an image
// (live false) or as a host whose /proc the tree holds.
func collectTree(t *testing.T, dir string, live bool) *facts.Facts {
	t.Helper()
	kind := facts.KindRootfs
	if live {
		kind = facts.KindHost
	}
	f := target.Collect(context.Background(), collecttest.NewEnv(t, dir, live), kind, "test", target.Options{
		Collectors: kernelCollectors(), Now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
	})
	for _, c := range []string{"kernel_modules", "sysctl", "limits", "packages"} {
		if s := f.Collectors[c]; s.Status != facts.StatusOK {
			t.Fatalf("collector %s: %s %s", c, s.Status, s.Reason)
		}
	}
	return f
}

var (
	packOnce sync.Once
	pack     *engine.Engine
	packErr  error
)

// judge evaluates the default pack over f and returns the kernel checks'
// results by id.
func judge(t *testing.T, f *facts.Facts) map[string]reports.Result {
	t.Helper()
	ctx := context.Background()
	packOnce.Do(func() {
		var src *engine.Source
		if src, packErr = engine.LoadFS(policies.FS, "embedded"); packErr == nil {
			pack, packErr = engine.New(ctx, engine.WithSource(src))
		}
	})
	if packErr != nil {
		t.Fatal(packErr)
	}
	doc, _, err := engine.NewDocument(f)
	if err != nil {
		t.Fatal(err)
	}
	results, err := pack.Evaluate(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]reports.Result{}
	for _, r := range results {
		if strings.HasPrefix(r.ID, "GH-KRN-") {
			out[r.ID] = r
		}
	}
	if len(out) != 4 {
		t.Fatalf("kernel results %v, want GH-KRN-001..004", slices.Sorted(maps.Keys(out)))
	}
	return out
}

// verdicts says, for each rule, pass or fail as gpuhost judges its subject,
// or the check's status where it was not judged (skip, error).
func verdicts(results map[string]reports.Result) map[string]string {
	out := map[string]string{}
	for _, r := range cisRules {
		res := results[r.check]
		switch res.Status {
		case reports.StatusPass:
			out[r.id] = "pass"
		case reports.StatusFail:
			out[r.id] = "pass"
			for _, f := range res.Findings {
				if f.Subject == r.subject {
					out[r.id] = "fail"
				}
			}
		default:
			out[r.id] = res.Status
		}
	}
	return out
}

// TestKernelChecksOnCISTrees judges the three trees offline with the
// default pack and holds each rule's verdict to cisFailing.
func TestKernelChecksOnCISTrees(t *testing.T) {
	for name, tree := range cisTrees {
		t.Run(name, func(t *testing.T) {
			f := collectTree(t, collecttest.TempTreeOf(t, tree()), false)
			got := verdicts(judge(t, f))
			for _, r := range cisRules {
				want := "pass"
				if slices.Contains(cisFailing[name], r.id) {
					want = "fail"
				}
				if got[r.id] != want {
					t.Errorf("%s (%s %s): %s, want %s", r.id, r.check, r.subject, got[r.id], want)
				}
			}
		})
	}
}

// TestKernelChecksLive judges a fake host: the hardened tree's files with
// a /proc whose running values and loaded modules differ, and holds the
// findings to what differs, saying which side.
func TestKernelChecksLive(t *testing.T) {
	tree := cisHardened()
	for k, v := range cisSysctl {
		tree["proc/sys/"+strings.ReplaceAll(k, ".", "/")] = v + "\n"
	}
	tree["proc/sys/net/ipv4/ip_forward"] = "1\n"
	delete(tree, "proc/sys/net/ipv6/conf/all/accept_ra")
	tree["proc/sys/kernel/osrelease"] = "5.15.0-105-generic\n"
	tree["proc/modules"] = "usb_storage 81920 1 uas, Live 0x0\next4 1 0 - Live 0x0\n"
	f := collectTree(t, collecttest.TempTreeOf(t, tree), true)
	res := judge(t, f)
	got := map[string]string{}
	for _, id := range []string{"GH-KRN-001", "GH-KRN-002", "GH-KRN-003"} {
		for _, fd := range res[id].Findings {
			got[id+" "+fd.Subject] = fd.Message
		}
	}
	want := map[string]string{
		"GH-KRN-001 usb-storage":                 "usb-storage is loaded in the running kernel, though modprobe.d keeps it from loading again; unload it (modprobe -r usb-storage) or reboot",
		"GH-KRN-002 net.ipv4.ip_forward":         "net.ipv4.ip_forward differs in the running kernel: it is configured 0 at /etc/sysctl.d/60-cis.conf:17 and runs as 1; want 0",
		"GH-KRN-002 net.ipv6.conf.all.accept_ra": "net.ipv6.conf.all.accept_ra differs in the running kernel: it is configured 0 at /etc/sysctl.d/60-cis.conf:19 and is not in the running kernel; want 0",
	}
	if !maps.Equal(got, want) {
		t.Errorf("findings\n%q\nwant\n%q", got, want)
	}
	if s := res["GH-KRN-003"].Status; s != reports.StatusPass {
		t.Errorf("GH-KRN-003 %s: %q", s, res["GH-KRN-003"].Messages)
	}
}
