package osinfo

import (
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

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
		{"no systemd", map[string]any{"etc/": nil}, 0, "", collect.StatusUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			collecttest.WriteTree(t, dir, tc.tree)
			f := newDoc(facts.KindRootfs)
			env := collecttest.NewEnv(t, dir, false)
			gather(t, env, f, "kernel", "packages")
			err := collectOne(t, env, f, "cgroup")
			if tc.status != "" {
				if st, _ := collect.Classify(err); st != tc.status {
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
	f := newDoc(facts.KindRootfs)
	f.Kernel = &facts.Kernel{Cmdline: []string{}, CmdlineSource: ""}
	f.Packages = []facts.Package{{Name: "systemd", Version: "255.4-1ubuntu8", Arch: "amd64"}}
	// The tree says otherwise; the facts already collected win.
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{"etc/kernel/cmdline": "systemd.unified_cgroup_hierarchy=0"})
	if err := collectOne(t, collecttest.NewEnv(t, dir, false), f, "cgroup"); err != nil {
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
		collecttest.WriteTree(t, dir, tc.tree)
		f := newDoc(facts.KindHost)
		if err := collectOne(t, collecttest.NewEnv(t, dir, true), f, "cgroup"); err != nil {
			t.Fatal(err)
		}
		if f.Cgroup.Version != tc.version || f.Cgroup.Source != tc.source {
			t.Errorf("cgroup %+v, want %d %q", f.Cgroup, tc.version, tc.source)
		}
	}
}

func TestLiveCgroupStatfsOnRealRoot(t *testing.T) {
	env := collecttest.NewEnv(t, "/", true)
	f := newDoc(facts.KindHost)
	err := collectOne(t, env, f, "cgroup")
	if st, _ := collect.Classify(err); st == collect.StatusError {
		t.Fatal(err)
	}
	if err == nil && (f.Cgroup.Version != 1 && f.Cgroup.Version != 2 || !strings.Contains(f.Cgroup.Source, "cgroup")) {
		t.Errorf("cgroup %+v", f.Cgroup)
	}
}
