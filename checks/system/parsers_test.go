package system

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/facts"
)

func TestParseDpkgStatusErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"no package", "Status: install ok installed\nVersion: 1\n", "line 1: paragraph has no Package"},
		{"no colon", "Package: a\nStatus: install ok installed\nVersion: 1\ngarbage line\n", "line 4: not a field"},
		{"orphan continuation", " continued\n", "line 1: continuation"},
		{"binary", "Package: a\n\x00\x00\n", "line 2: binary"},
		{"bad status", "Package: a\nStatus: installed\nVersion: 1\n", "line 1: package a: malformed Status"},
		{"no version", "Package: a\nStatus: install ok installed\n", "no Version"},
		{"repeated field", "Package: a\nPackage: b\n", "line 2: field Package repeated"},
		{"duplicate package", "Package: a\nStatus: install ok installed\nVersion: 1\nArchitecture: amd64\n\nPackage: a\nStatus: install ok installed\nVersion: 2\nArchitecture: amd64\n", "line 6: package a:amd64 already listed at line 1"},
		{"bad field name", "Package: a\n#comment: x\n", "line 2: invalid field name"},
		{"no status", "Package: a\nVersion: 1\n", "has no Status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDpkgStatus([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseDpkgStatusTooManyStanzas(t *testing.T) {
	var b strings.Builder
	for i := 0; i <= maxStanzas; i++ {
		b.WriteString("Package: p\nStatus: deinstall ok not-installed\n\n")
	}
	_, err := ParseDpkgStatus([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "more than 200000 paragraphs") {
		t.Errorf("err = %v", err)
	}
}

func TestParseDpkgStatusEdges(t *testing.T) {
	pkgs, err := ParseDpkgStatus(nil)
	if err != nil || pkgs == nil || len(pkgs) != 0 {
		t.Errorf("empty: %v %v, want an empty non-nil list", pkgs, err)
	}
	in := "\n\nPackage: zz\r\nStatus: hold ok installed\r\nVersion: 1:2.0-1\r\nArchitecture: all\r\n\r\n\n" +
		"Package: aa\nStatus: install ok installed\nVersion: 3\nArchitecture: arm64\nDescription: \xe9t\xe9 latin-1\n\tcontinued with tab\n"
	pkgs, err = ParseDpkgStatus([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []facts.Package{{Name: "aa", Version: "3", Arch: "arm64"}, {Name: "zz", Version: "1:2.0-1", Arch: "all", Held: true}}
	if len(pkgs) != 2 || pkgs[0] != want[0] || pkgs[1] != want[1] {
		t.Errorf("got %+v, want %+v", pkgs, want)
	}
	if _, ok := Installed(pkgs, "nope"); ok {
		t.Error("Installed found a missing package")
	}
}

func TestOfflineCgroup(t *testing.T) {
	systemd := func(v string) string {
		return "Package: systemd\nStatus: install ok installed\nVersion: " + v + "\nArchitecture: amd64\n"
	}
	for _, tc := range []struct {
		name    string
		tree    map[string]any
		version int
		source  string
		status  string
	}{
		{"explicit 0", map[string]any{"etc/kernel/cmdline": "systemd.unified_cgroup_hierarchy=1 systemd.unified_cgroup_hierarchy=false", "var/lib/dpkg/status": systemd("252.22-1")}, 1, "/etc/kernel/cmdline: systemd.unified_cgroup_hierarchy=false", ""},
		{"bare flag", map[string]any{"etc/kernel/cmdline": "systemd.unified_cgroup_hierarchy"}, 2, "/etc/kernel/cmdline: systemd.unified_cgroup_hierarchy=", ""},
		{"cgroup_no_v1", map[string]any{"etc/kernel/cmdline": "cgroup_no_v1=all", "var/lib/dpkg/status": systemd("245.4-4ubuntu3")}, 2, "/etc/kernel/cmdline: cgroup_no_v1=all", ""},
		{"systemd 252", map[string]any{"var/lib/dpkg/status": systemd("252.22-1~deb12u1")}, 2, "systemd 252 default (unified)", ""},
		{"systemd 245", map[string]any{"var/lib/dpkg/status": systemd("245.4-4ubuntu3.23")}, 1, "systemd 245 default (hybrid)", ""},
		{"no systemd", map[string]any{"etc/": nil}, 0, "", facts.StatusUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, tc.tree)
			f := newFacts(facts.KindRootfs)
			env := newEnv(t, dir, false)
			collect(t, env, f, "kernel", "packages")
			err := collectOne(t, env, f, "cgroup")
			if tc.status != "" {
				if st, _ := collector.Classify(err); st != tc.status {
					t.Errorf("status %s (%v), want %s", st, err, tc.status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Cgroup.Version != tc.version || f.Cgroup.Source != tc.source {
				t.Errorf("cgroup %+v, want %d %q", f.Cgroup, tc.version, tc.source)
			}
		})
	}
}

func TestCgroupReusesEarlierFacts(t *testing.T) {
	f := newFacts(facts.KindRootfs)
	f.Kernel = &facts.Kernel{Cmdline: []string{}, CmdlineSource: ""}
	f.Packages = []facts.Package{{Name: "systemd", Version: "255.4-1ubuntu8", Arch: "amd64"}}
	// The tree says otherwise; the facts already collected win.
	dir := t.TempDir()
	writeTree(t, dir, map[string]any{"etc/kernel/cmdline": "systemd.unified_cgroup_hierarchy=0"})
	if err := collectOne(t, newEnv(t, dir, false), f, "cgroup"); err != nil {
		t.Fatal(err)
	}
	if f.Cgroup.Version != 2 || f.Cgroup.Source != "systemd 255 default (unified)" {
		t.Errorf("cgroup %+v", f.Cgroup)
	}
}

func TestLiveCgroupHybridAndV1(t *testing.T) {
	for _, tc := range []struct {
		tree    map[string]any
		version int
		source  string
	}{
		{map[string]any{"sys/fs/cgroup/unified/cgroup.controllers": ""}, 1, "/sys/fs/cgroup/unified/cgroup.controllers (hybrid)"},
		{map[string]any{"sys/fs/cgroup/memory/": nil}, 1, "/sys/fs/cgroup has no cgroup.controllers"},
	} {
		dir := t.TempDir()
		writeTree(t, dir, tc.tree)
		f := newFacts(facts.KindHost)
		if err := collectOne(t, newEnv(t, dir, true), f, "cgroup"); err != nil {
			t.Fatal(err)
		}
		if f.Cgroup.Version != tc.version || f.Cgroup.Source != tc.source {
			t.Errorf("cgroup %+v, want %d %q", f.Cgroup, tc.version, tc.source)
		}
	}
}

func TestLiveCgroupStatfsOnRealRoot(t *testing.T) {
	env := newEnv(t, "/", true)
	f := newFacts(facts.KindHost)
	err := collectOne(t, env, f, "cgroup")
	if st, _ := collector.Classify(err); st == facts.StatusError {
		t.Fatal(err)
	}
	if err == nil && (f.Cgroup.Version != 1 && f.Cgroup.Version != 2 || !strings.Contains(f.Cgroup.Source, "cgroup")) {
		t.Errorf("cgroup %+v", f.Cgroup)
	}
}

func TestParseCrypttab(t *testing.T) {
	ct, err := parseCrypttab([]byte("# c\n\nroot_crypt UUID=aa-bb none luks,discard,,\nhome PARTUUID=cc /etc/keys/home.key\nswap LABEL=sw\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ct) != 3 || strings.Join(ct[0].Options, ",") != "luks,discard" || ct[1].KeyFile != "/etc/keys/home.key" || ct[2].Options == nil || ct[2].Device != "LABEL=sw" {
		t.Errorf("%+v", ct)
	}
	if _, err := parseCrypttab([]byte("ok /dev/sda1\nonlyname\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("one field: %v", err)
	}
}

func TestParseFstabAndMountinfoErrors(t *testing.T) {
	if _, err := parseFstab([]byte("/dev/sda1 /\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("short fstab line: %v", err)
	}
	if _, err := parseMountinfo([]byte("1 0 8:1 / /\n")); err == nil {
		t.Error("short mountinfo line accepted")
	}
	if got := unescapeOctal(`a\040b\\c\9`); got != `a b\\c\9` {
		t.Errorf("unescape %q", got)
	}
}

func TestOfflineRootOnCrypttabMapping(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]any{
		"etc/crypttab": "cryptroot UUID=1 none luks\n",
		"etc/fstab":    "/dev/mapper/cryptroot / ext4 defaults 0 1\n",
	})
	f := newFacts(facts.KindRootfs)
	if err := collectOne(t, newEnv(t, dir, false), f, "encryption"); err != nil {
		t.Fatal(err)
	}
	if r := f.Encryption.Root; r == nil || !r.Encrypted || r.Source != "fstab" || r.Chain[0] != "/dev/mapper/cryptroot" {
		t.Errorf("root %+v", r)
	}
}

func TestLiveRootOnPlainPartition(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]any{
		"proc/self/mountinfo":              "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n",
		"sys/dev/block/8:1/uevent":         "DEVNAME=sda1\n",
		"sys/dev/block/254:0/dm/uuid":      "CRYPT-VERITY-x\n",
		"sys/dev/block/254:0/slaves/sda2/": nil,
	})
	f := newFacts(facts.KindHost)
	if err := collectOne(t, newEnv(t, dir, true), f, "encryption"); err != nil {
		t.Fatal(err)
	}
	if r := f.Encryption.Root; r == nil || r.Encrypted || strings.Join(r.Chain, ",") != "sda1" {
		t.Errorf("root %+v", r)
	}
	// dm-verity protects integrity, not confidentiality.
	c, enc := devChain(newEnv(t, dir, true).FS, "254:0", "")
	if enc || strings.Join(c.names, ",") != "254:0,sda2" || c.hops[0].Kind != "verity" {
		t.Errorf("verity chain %+v encrypted=%v", c.hops, enc)
	}
}

func TestSlavesCycleIsBounded(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]any{
		"sys/devices/a/uevent":   "DEVNAME=dm-5\n",
		"sys/devices/a/dm/uuid":  "CRYPT-LUKS2-x\n",
		"sys/devices/a/slaves/x": symlink("../../a"),
		"sys/dev/block/253:5":    symlink("../../devices/a"),
	})
	c, _ := devChain(newEnv(t, dir, true).FS, "253:5", "")
	if len(c.names) > maxChainDepth+2 {
		t.Errorf("chain of %d through a cycle", len(c.names))
	}
}

func TestParseProcNet(t *testing.T) {
	socks, err := parseProcNet([]byte(procTCP), "tcp", "0A")
	if err != nil || len(socks) != 3 || socks[1].Addr.String() != "127.0.0.1" || socks[1].Port != 631 || socks[1].Inode != 21002 {
		t.Errorf("%+v %v", socks, err)
	}
	for _, bad := range []string{
		"   0: 00000000:0016 00000000:0000 0A\n",
		"   0: 0000000:0016 00000000:0000 0A 0 0 0 0 0 1\n",
		"   0: 00000000:00016 00000000:0000 0A 0 0 0 0 0 1\n",
		"   0: 00000000:0016 00000000:0000 0A 0 0 0 0 0 x\n",
	} {
		if _, err := parseProcNet([]byte(bad), "tcp", "0A"); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestManifest(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"schema":"gpuhost.manifest/v2"}`, "schema is"},
		{`{"schema":"gpuhost.manifest/v1"} {}`, "trailing"},
		{`[1]`, "cannot unmarshal"},
		{`null`, "not a JSON object"},
		{`{`, "unexpected EOF"},
	} {
		dir := t.TempDir()
		writeTree(t, dir, map[string]any{"etc/gpuhost/manifest.json": tc.in})
		err := collectOne(t, newEnv(t, dir, false), newFacts(facts.KindRootfs), "manifest")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "manifest.json") {
			t.Errorf("%s: %v, want %q naming the file", tc.in, err, tc.want)
		}
	}
}

func TestSplitCmdline(t *testing.T) {
	got := splitCmdline("  a  b=\"c d\" \"e f\"\tg=\n")
	if strings.Join(got, "|") != "a|b=c d|e f|g=" {
		t.Errorf("%q", got)
	}
	if splitCmdline("") == nil {
		t.Error("nil for empty")
	}
}

func TestMajorVersion(t *testing.T) {
	for in, want := range map[string]int{"252.22-1~deb12u1": 252, "1:249.11": 249, "x": 0, "": 0, "99999999999999": 999999999} {
		if got := majorVersion(in); got != want {
			t.Errorf("majorVersion(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestDpkgInstalledWhateverTheSelection: a package dpkg has installed
// counts whatever its selection says (deinstall or purge only mark it for
// removal; its files are there), and hold marks it held; half-installed
// and config-files states are not installed.
func TestDpkgInstalledWhateverTheSelection(t *testing.T) {
	status := "Package: a\nStatus: install ok installed\nVersion: 1\nArchitecture: amd64\n\n" +
		"Package: b\nStatus: deinstall ok installed\nVersion: 2\nArchitecture: amd64\nSource: bsrc (2.1)\nMaintainer: M <m@example.org>\n\n" +
		"Package: c\nStatus: hold ok installed\nVersion: 3\nArchitecture: amd64\n\n" +
		"Package: d\nStatus: purge ok config-files\nVersion: 4\nArchitecture: amd64\n\n" +
		"Package: e\nStatus: install ok half-installed\nVersion: 5\nArchitecture: amd64\n"
	got, err := ParseDpkgInstalled([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, fmt.Sprintf("%s:%v", p.Name, p.Held))
	}
	if strings.Join(names, " ") != "a:false b:false c:true" {
		t.Errorf("installed %v; want a, b and c (held)", names)
	}
	if got[1].Source != "bsrc (2.1)" || got[1].Maintainer != "M <m@example.org>" || got[1].Line != 6 {
		t.Errorf("b: %+v", got[1])
	}
}
