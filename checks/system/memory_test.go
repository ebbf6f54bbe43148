package system

import (
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/checks/sysroot"
)

func treeFS(t *testing.T, files map[string]any) sysroot.FS {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, files)
	return newEnv(t, dir, false).FS
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

func TestParseKubeletConfig(t *testing.T) {
	k, err := ParseKubeletConfig("config.yaml", []byte(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
systemReserved:
  cpu: 500m
  memory: 2Gi
evictionHard:
  memory.available: 500Mi
  nodefs.available: 10%
enforceNodeAllocatable: [pods]
`))
	if err != nil {
		t.Fatal(err)
	}
	if k.CgroupDriver != "systemd" || k.SystemReservedMemory != "2Gi" || k.KubeReservedMemory != "" || k.EvictionHardMemory != "500Mi" || len(k.EnforceNodeAllocatable) != 1 {
		t.Errorf("kubelet %+v", k)
	}
	if _, err := ParseKubeletConfig("config.yaml", []byte("kind: Pod\n")); err == nil || !strings.Contains(err.Error(), "KubeletConfiguration") {
		t.Errorf("a Pod accepted as a kubelet config: %v", err)
	}
}
