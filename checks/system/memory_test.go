package system

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/checks/facts"
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

// TestKubeletDropIns: drop-ins in the kubelet's config dir are merged over
// its configuration in name order, a field a drop-in sets replacing the
// earlier value; a drop-in alone is a kubelet configuration too.
func TestKubeletDropIns(t *testing.T) {
	base := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: cgroupfs\nrotateCertificates: true\n"
	drop := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\nsystemReserved:\n  memory: 2Gi\nevictionHard:\n  memory.available: 500Mi\nenforceNodeAllocatable: [pods]\n"
	later := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nsystemReserved:\n  memory: 4Gi\n"
	for _, c := range []struct {
		name  string
		files map[string]any
		check func(t *testing.T, k *facts.Kubelet)
	}{
		{"merged", map[string]any{
			"var/lib/kubelet/config.yaml":                  base,
			"etc/kubernetes/kubelet.conf.d/50-memory.conf": drop,
			"etc/kubernetes/kubelet.conf.d/90-larger.conf": later,
			"etc/kubernetes/kubelet.conf.d/README":         "not a drop-in",
		}, func(t *testing.T, k *facts.Kubelet) {
			if k.CgroupDriver != "systemd" || k.SystemReservedMemory != "4Gi" || k.EvictionHardMemory != "500Mi" || !k.RotateCertificates {
				t.Errorf("kubelet %+v", k)
			}
			if strings.Count(k.ConfigPath, ",") != 2 {
				t.Errorf("config_path %q should name the three files", k.ConfigPath)
			}
		}},
		{"drop-in only", map[string]any{"etc/kubernetes/kubelet.conf.d/50-memory.conf": drop}, func(t *testing.T, k *facts.Kubelet) {
			if k.SystemReservedMemory != "2Gi" || k.RotateCertificates {
				t.Errorf("kubelet %+v", k)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, c.files)
			env := newEnv(t, dir, false)
			f := facts.New(facts.KindRootfs, dir, time.Unix(0, 0))
			if err := (kubeletCollector{}).Collect(context.Background(), env, f); err != nil {
				t.Fatal(err)
			}
			c.check(t, f.Kubelet)
		})
	}
}

// TestLiveSliceNotStarted: on a live host a slice without a cgroup yet
// (user.slice before the first login) is judged by its units, which say
// what applies once it starts.
func TestLiveSliceNotStarted(t *testing.T) {
	fsys := newEnv(t, func() string {
		dir := t.TempDir()
		writeTree(t, dir, map[string]any{
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
