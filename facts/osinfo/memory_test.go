package osinfo

import (
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// treeFS opens a new tree written from files.
func treeFS(t *testing.T, files map[string]any) sysroot.FS {
	t.Helper()
	return collecttest.OpenFS(t, collecttest.TempTreeOf(t, files))
}

// TestSliceDropIns: the drop-ins apply in name order across directories,
// later ones overriding, and only the [Slice] section counts.
func TestSliceDropIns(t *testing.T) {
	fsys := treeFS(t, map[string]any{
		"usr/lib/systemd/system/user.slice":              "[Unit]\nDescription=User and Session Slice\n",
		"usr/lib/systemd/system/user.slice.d/10-a.conf":  "[Slice]\nMemoryMax=8G\n",
		"etc/systemd/system/user.slice.d/50-memory.conf": "[Slice]\nMemoryMax=32G\nMemoryHigh=30G\n",
		"etc/systemd/system/user.slice.d/60-other.conf":  "[Unit]\nMemoryMax=1G\n",
	})
	m, err := cgroupMemory(fsys, false)
	if err != nil {
		t.Fatal(err)
	}
	if m.ControllerEnabled != nil {
		t.Errorf("an image's controller state is known: %v", *m.ControllerEnabled)
	}
	u := m.Slices[1]
	if u.Name != "user.slice" || u.MemoryMax != "32G" || u.MemoryHigh != "30G" || !strings.HasSuffix(u.Source, "50-memory.conf") {
		t.Errorf("user.slice %+v; want 32G/30G from 50-memory.conf", u)
	}
	if s := m.Slices[0]; s.MemoryMax != "" || !strings.Contains(s.Source, "default") {
		t.Errorf("system.slice %+v; want no limit, from the default", s)
	}
}

func TestSliceDropInUnparseable(t *testing.T) {
	fsys := treeFS(t, map[string]any{"etc/systemd/system/user.slice.d/x.conf": "[Slice\nMemoryMax=1G\n"})
	if _, err := cgroupMemory(fsys, false); err == nil || !strings.Contains(err.Error(), "x.conf") {
		t.Fatalf("cgroupMemory = %v; want an error naming the drop-in", err)
	}
}

// TestLiveSliceNotStarted: on a live host a slice without a cgroup yet
// (user.slice before the first login) is judged by its units, which say
// what applies once it starts.
func TestLiveSliceNotStarted(t *testing.T) {
	fsys := collecttest.NewEnv(t, func() string {
		dir := t.TempDir()
		collecttest.WriteTree(t, dir, map[string]any{
			"sys/fs/cgroup/cgroup.subtree_control":                   "cpu memory pids\n",
			"sys/fs/cgroup/system.slice/memory.max":                  "max\n",
			"sys/fs/cgroup/system.slice/memory.high":                 "max\n",
			"etc/systemd/system/user.slice.d/50-gpuhost-memory.conf": "[Slice]\nMemoryMax=50%\n",
		})
		return dir
	}(), true).FS
	m, err := cgroupMemory(fsys, true)
	if err != nil {
		t.Fatal(err)
	}
	u := m.Slices[1]
	if u.Name != "user.slice" || u.MemoryMax != "50%" || !strings.Contains(u.Source, "slice not started") {
		t.Errorf("user.slice %+v", u)
	}
}
