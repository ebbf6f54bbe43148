package osinfo

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

// ubuntuSysctl is how Ubuntu 22.04 ships sysctl.d (systemd's
// 50-default.conf with its glob and exclusion, procps'
// 10-network-security.conf and the 99-sysctl.conf link), with an admin's
// file and edits on top.
func ubuntuSysctl() map[string]any {
	return map[string]any{
		"usr/lib/sysctl.d/50-default.conf": "# systemd\n" +
			"net.ipv4.conf.default.rp_filter = 2\n" +
			"net.ipv4.conf.*.rp_filter = 2\n" +
			"-net.ipv4.conf.all.rp_filter\n" +
			"kernel.core_uses_pid = 1\n",
		"usr/lib/sysctl.d/50-pid-max.conf":        "kernel.pid_max = 4194304\n",
		"etc/sysctl.d/10-network-security.conf":   "net.ipv4.conf.default.rp_filter=2\nnet.ipv4.conf.all.rp_filter=2\n",
		"etc/sysctl.d/50-pid-max.conf":            collecttest.Symlink("/dev/null"),
		"etc/sysctl.d/60-cis.conf":                "; CIS\nnet.ipv4.conf.all.rp_filter = 1\n-net.ipv4.ip_forward = 0\nnet/ipv4/conf/eth0.100/rp_filter = 1\nnet.ipv4.conf.default.rp_filter = 1\nnot an assignment\nkernel..randomize_va_space=2\n",
		"etc/sysctl.d/70-again.conf":              "net.ipv4.conf.all.rp_filter=1\nnet.ipv4.conf.default.rp_filter = 0\n",
		"etc/sysctl.d/99-sysctl.conf":             collecttest.Symlink("../sysctl.conf"),
		"etc/sysctl.d/README.sysctl":              "net.ipv4.ip_forward = 1\n",
		"etc/sysctl.conf":                         "#net.ipv4.ip_forward=1\nfs.suid_dumpable = 0\n",
		"run/sysctl.d/65-run.conf":                "net.ipv4.tcp_syncookies = 1\nnet.ipv4.conf.eth0.log_martians = 1\n",
		"usr/local/lib/sysctl.d/65-run.conf":      "net.ipv4.tcp_syncookies = 0\n",
		"lib/sysctl.d/80-splitusr.conf":           "kernel.randomize_va_space = 1\n",
		"etc/sysctl.d/90-dotdot.conf":             "net/../../etc/shadow = 1\n../x = 1\n-net.ipv4.conf.*.rp_filter\n",
		"usr/local/lib/sysctl.d/95-excluded.conf": "-net.ipv6.conf.all.forwarding\n",
	}
}

func TestSysctlFollowsSystemdOrder(t *testing.T) {
	dir := collecttest.TempTreeOf(t, ubuntuSysctl())
	f := newDoc(facts.KindRootfs)
	if err := collectOne(t, collecttest.NewEnv(t, dir, false), f, "sysctl"); err != nil {
		t.Fatal(err)
	}
	s := f.Sysctl
	wantFiles := []string{
		"/etc/sysctl.d/10-network-security.conf", "/usr/lib/sysctl.d/50-default.conf", "/etc/sysctl.d/60-cis.conf",
		"/run/sysctl.d/65-run.conf", "/etc/sysctl.d/70-again.conf", "/lib/sysctl.d/80-splitusr.conf",
		"/etc/sysctl.d/90-dotdot.conf", "/usr/local/lib/sysctl.d/95-excluded.conf", "/etc/sysctl.conf",
	}
	if !slices.Equal(s.Files, wantFiles) {
		t.Errorf("files\n%q\nwant\n%q", s.Files, wantFiles)
	}
	at := func(v, file string, line int) facts.SysctlSetting {
		return facts.SysctlSetting{Value: v, File: file, Line: line}
	}
	want := map[string]facts.SysctlSetting{
		// The same value again keeps the first line, as systemd does.
		"net.ipv4.conf.all.rp_filter":      at("1", "/etc/sysctl.d/60-cis.conf", 2),
		"net.ipv4.conf.default.rp_filter":  at("0", "/etc/sysctl.d/70-again.conf", 2),
		"net.ipv4.ip_forward":              at("0", "/etc/sysctl.d/60-cis.conf", 3),
		"net.ipv4.conf.eth0/100.rp_filter": at("1", "/etc/sysctl.d/60-cis.conf", 4),
		"kernel.randomize_va_space":        at("2", "/etc/sysctl.d/60-cis.conf", 7),
		"kernel.core_uses_pid":             at("1", "/usr/lib/sysctl.d/50-default.conf", 5),
		"net.ipv4.tcp_syncookies":          at("1", "/run/sysctl.d/65-run.conf", 1),
		"net.ipv4.conf.eth0.log_martians":  at("1", "/run/sysctl.d/65-run.conf", 2),
		"fs.suid_dumpable":                 at("0", "/etc/sysctl.conf", 2),
		// "../x" is dotted: the parameter ".x", inside /proc/sys.
		"/x": at("1", "/etc/sysctl.d/90-dotdot.conf", 2),
	}
	// 80-splitusr.conf sets kernel.randomize_va_space after 60-cis.conf.
	want["kernel.randomize_va_space"] = at("1", "/lib/sysctl.d/80-splitusr.conf", 1)
	if !reflect.DeepEqual(s.Configured, want) {
		t.Errorf("configured\n%v\nwant\n%v", s.Configured, want)
	}
	// 90-dotdot.conf drops the glob again.
	if len(s.Globs) != 0 {
		t.Errorf("globs %+v, want none", s.Globs)
	}
	wantExcluded := map[string]collect.FileLine{"net.ipv6.conf.all.forwarding": {File: "/usr/local/lib/sysctl.d/95-excluded.conf", Line: 1}}
	// 60-cis.conf set net.ipv4.conf.all.rp_filter after 50-default.conf
	// kept the glob off it.
	if !reflect.DeepEqual(s.Excluded, wantExcluded) {
		t.Errorf("excluded %v, want %v", s.Excluded, wantExcluded)
	}
	if s.Running != nil {
		t.Errorf("an image has running values %v", s.Running)
	}
}

func TestSysctlGlobsAndExclusions(t *testing.T) {
	s := &facts.Sysctl{Configured: map[string]facts.SysctlSetting{}, Globs: []facts.SysctlGlob{}, Excluded: map[string]collect.FileLine{}}
	const text = "net.ipv4.conf.*.rp_filter = 2\n" +
		"-net.ipv4.conf.all.rp_filter\n" +
		"net.ipv4.conf.?ll.accept_redirects = 1\n" +
		"net.ipv4.conf.*.rp_filter = 2\n" +
		"net.ipv4.conf.*.rp_filter = 1\n" +
		"net.ipv4.ip_forward = 1\n" +
		"-net.ipv4.ip_forward\n"
	if err := parseSysctl([]byte(text), "/etc/sysctl.d/x.conf", s); err != nil {
		t.Fatal(err)
	}
	wantGlobs := []facts.SysctlGlob{
		{Pattern: "net.ipv4.conf.?ll.accept_redirects", Value: "1", File: "/etc/sysctl.d/x.conf", Line: 3},
		{Pattern: "net.ipv4.conf.*.rp_filter", Value: "1", File: "/etc/sysctl.d/x.conf", Line: 5},
	}
	if !reflect.DeepEqual(s.Globs, wantGlobs) {
		t.Errorf("globs %+v, want %+v", s.Globs, wantGlobs)
	}
	// "-key" drops what was assigned before it.
	if len(s.Configured) != 0 {
		t.Errorf("configured %v, want none", s.Configured)
	}
	if got := slices.Sorted(maps.Keys(s.Excluded)); !slices.Equal(got, []string{"net.ipv4.conf.all.rp_filter", "net.ipv4.ip_forward"}) {
		t.Errorf("excluded %v", s.Excluded)
	}
}

func TestSysctlKey(t *testing.T) {
	for in, want := range map[string]string{
		"net.ipv4.ip_forward":              "net.ipv4.ip_forward",
		"net/ipv4/ip_forward":              "net.ipv4.ip_forward",
		"/net//ipv4/ip_forward/":           "net.ipv4.ip_forward",
		"net/ipv4/conf/eth0.100/rp_filter": "net.ipv4.conf.eth0/100.rp_filter",
		"net.ipv4.conf.eth0/100.rp_filter": "net.ipv4.conf.eth0/100.rp_filter",
		"net..ipv4.ip_forward":             "net.ipv4.ip_forward",
		"kernel":                           "kernel",
	} {
		if got, ok := sysctlKey(in); !ok || got != want {
			t.Errorf("sysctlKey(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	// Dotted keys have no path parts of their own: "../x" is the
	// parameter ".x", no way out of /proc/sys.
	for in, want := range map[string]string{"../x": "/x", "a.b/../c": "a.b/./c"} {
		if got, ok := sysctlKey(in); !ok || got != want || !safeProcSysPath(got) {
			t.Errorf("sysctlKey(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", ".", "/", "net/../etc", "net/./x", "/../x"} {
		if got, ok := sysctlKey(bad); ok {
			t.Errorf("sysctlKey(%q) = %q, want refused", bad, got)
		}
	}
}

// sysctlProc is a fake /proc/sys: two interfaces beside all and default, a
// write-only parameter, a value with tabs, and binfmt_misc.
func sysctlProc() map[string]any {
	return map[string]any{
		"proc/sys/net/ipv4/ip_forward":               "1\n",
		"proc/sys/net/ipv4/conf/all/rp_filter":       "0\n",
		"proc/sys/net/ipv4/conf/default/rp_filter":   "1\n",
		"proc/sys/net/ipv4/conf/eth0/rp_filter":      "1\n",
		"proc/sys/net/ipv4/conf/eth0.100/rp_filter":  "2\n",
		"proc/sys/net/ipv4/conf/veth1/rp_filter":     "0\n",
		"proc/sys/net/ipv6/neigh/veth1/retrans_time": "1000\n",
		"proc/sys/net/ipv6/conf/default/accept_ra":   "1\n",
		"proc/sys/kernel/printk":                     "4\t4\t1\t7\n",
		"proc/sys/kernel/randomize_va_space":         "2\n",
		"proc/sys/fs/suid_dumpable":                  "0\n",
		"proc/sys/fs/binfmt_misc/status":             "enabled\n",
		"proc/sys/vm/drop_caches":                    "",
		"etc/sysctl.d/60-cis.conf":                   "net.ipv4.conf.eth0/100.rp_filter = 1\n",
	}
}

func TestSysctlRunningLive(t *testing.T) {
	dir := collecttest.TempTreeOf(t, sysctlProc())
	chmod(t, dir, "proc/sys/vm/drop_caches", 0o200)
	f := newDoc(facts.KindHost)
	if err := collectOne(t, collecttest.NewEnv(t, dir, true), f, "sysctl"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"net.ipv4.ip_forward":              "1",
		"net.ipv4.conf.all.rp_filter":      "0",
		"net.ipv4.conf.default.rp_filter":  "1",
		"net.ipv4.conf.eth0/100.rp_filter": "2",
		"net.ipv6.conf.default.accept_ra":  "1",
		"kernel.printk":                    "4 4 1 7",
		"kernel.randomize_va_space":        "2",
		"fs.suid_dumpable":                 "0",
	}
	if !reflect.DeepEqual(f.Sysctl.Running, want) {
		t.Errorf("running\n%v\nwant\n%v", f.Sysctl.Running, want)
	}
	// A host whose /proc/sys cannot be read is unavailable, not clean.
	f = newDoc(facts.KindHost)
	err := collectOne(t, collecttest.NewEnv(t, collecttest.TempTreeOf(t, map[string]any{"etc/": nil}), true), f, "sysctl")
	if got := collecttest.Status(err); got != facts.StatusUnavailable {
		t.Errorf("without /proc/sys: %v (%s)", err, got)
	}
}

func TestSysctlBounds(t *testing.T) {
	var many strings.Builder
	for i := range maxSysctlKeys + 1 {
		fmt.Fprintf(&many, "k.p%d = 1\n", i)
	}
	for name, tree := range map[string]map[string]any{
		"binary":    {"etc/sysctl.d/a.conf": "a.b = 1\x00\n"},
		"too large": {"etc/sysctl.conf": strings.Repeat(";", maxDropInFile+1)},
		"too many":  {"etc/sysctl.d/a.conf": many.String()},
	} {
		t.Run(name, func(t *testing.T) {
			f := newDoc(facts.KindRootfs)
			if err := collectOne(t, collecttest.NewEnv(t, collecttest.TempTreeOf(t, tree), false), f, "sysctl"); err == nil {
				t.Errorf("no error; facts %+v", f.Sysctl)
			}
		})
	}
}

// A key with ".." parts names no parameter; on a live host it must not
// make the collector read a file outside /proc/sys.
func TestSysctlDotDotStaysInProcSys(t *testing.T) {
	tree := sysctlProc()
	tree["etc/sysctl.d/90-x.conf"] = "net/ipv4/conf/../../../../etc/secret/x = 1\nnet.ipv4.conf.eth0/../../../../etc/secret.x = 1\n"
	tree["etc/secret/x"] = "s3cret\n"
	f := newDoc(facts.KindHost)
	if err := collectOne(t, collecttest.NewEnv(t, collecttest.TempTreeOf(t, tree), true), f, "sysctl"); err != nil {
		t.Fatal(err)
	}
	for k, v := range f.Sysctl.Running {
		if strings.Contains(v, "s3cret") {
			t.Errorf("running %s = %q: read outside /proc/sys", k, v)
		}
	}
	if len(f.Sysctl.Configured) != 1 {
		t.Errorf("configured %v, want only 60-cis.conf's key", f.Sysctl.Configured)
	}
}

func TestLimitsOrder(t *testing.T) {
	dir := collecttest.TempTreeOf(t, map[string]any{
		"etc/security/limits.conf":             "# <domain> <type> <item> <value>\n*               soft    core            0\n*  hard core 0 # cis\nroot hard nofile\n@admin - nproc 100 extra\n",
		"etc/security/limits.d/90-late.conf":   "* hard core unlimited\n",
		"etc/security/limits.d/10-early.conf":  "*\t-\tcore\t0\nbob bad core 0\n",
		"etc/security/limits.d/50-masked.conf": collecttest.Symlink("/dev/null"),
		"etc/security/limits.d/notes.txt":      "* hard core 99\n",
	})
	f := newDoc(facts.KindRootfs)
	if err := collectOne(t, collecttest.NewEnv(t, dir, false), f, "limits"); err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{"/etc/security/limits.conf", "/etc/security/limits.d/10-early.conf", "/etc/security/limits.d/90-late.conf"}
	if !slices.Equal(f.Limits.Files, wantFiles) {
		t.Errorf("files %q, want %q", f.Limits.Files, wantFiles)
	}
	want := []facts.LimitEntry{
		{Domain: "*", Type: "soft", Item: "core", Value: "0", File: "/etc/security/limits.conf", Line: 2},
		{Domain: "*", Type: "hard", Item: "core", Value: "0", File: "/etc/security/limits.conf", Line: 3},
		{Domain: "*", Type: "-", Item: "core", Value: "0", File: "/etc/security/limits.d/10-early.conf", Line: 1},
		{Domain: "*", Type: "hard", Item: "core", Value: "unlimited", File: "/etc/security/limits.d/90-late.conf", Line: 1},
	}
	if !reflect.DeepEqual(f.Limits.Entries, want) {
		t.Errorf("entries\n%+v\nwant\n%+v", f.Limits.Entries, want)
	}
	// No limits files at all: nothing set, which is no error.
	f = newDoc(facts.KindRootfs)
	if err := collectOne(t, collecttest.NewEnv(t, collecttest.TempTreeOf(t, map[string]any{"etc/": nil}), false), f, "limits"); err != nil || f.Limits.Entries == nil || len(f.Limits.Files) != 0 {
		t.Errorf("empty tree: %v, %+v", err, f.Limits)
	}
}

// Without Debian's 99-sysctl.conf link, /etc/sysctl.conf is read last, as
// `sysctl --system` reads it, after every sysctl.d file.
func TestSysctlConfLastWithoutLink(t *testing.T) {
	dir := collecttest.TempTreeOf(t, map[string]any{
		"etc/sysctl.conf":           "net.ipv4.ip_forward = 0\n",
		"etc/sysctl.d/zz-last.conf": "net.ipv4.ip_forward = 1\n",
	})
	f := newDoc(facts.KindRootfs)
	if err := collectOne(t, collecttest.NewEnv(t, dir, false), f, "sysctl"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/etc/sysctl.d/zz-last.conf", "/etc/sysctl.conf"}; !slices.Equal(f.Sysctl.Files, want) {
		t.Errorf("files %q, want %q", f.Sysctl.Files, want)
	}
	if got := f.Sysctl.Configured["net.ipv4.ip_forward"]; got.Value != "0" || got.File != "/etc/sysctl.conf" {
		t.Errorf("ip_forward %+v, want 0 from /etc/sysctl.conf", got)
	}
}

func chmod(t *testing.T, dir, name string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
		t.Fatal(err)
	}
}

// safeProcSysPath says whether a dotted key's path stays inside /proc/sys:
// no empty, "." or ".." part.
func safeProcSysPath(key string) bool {
	for p := range strings.SplitSeq(swapSeparators(key), "/") {
		if p == "" || p == "." || p == ".." {
			return false
		}
	}
	return true
}
