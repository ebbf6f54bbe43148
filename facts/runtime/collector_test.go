package runtime

import (
	"context"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// newDoc is an empty facts document of the given target kind for the
// tests to collect into.
func newDoc(kind string) *facts.Facts {
	return facts.New(kind, "test", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
}

// gather runs CollectRuntime over dir as an offline rootfs and returns
// what it collected and its raw error.
func gather(t testing.TB, dir string) (*facts.Facts, map[string]error) {
	t.Helper()
	rt, err := CollectRuntime(context.Background(), &collect.Env{FS: collecttest.OpenFS(t, dir)})
	f := newDoc(facts.KindRootfs)
	f.ContainerRuntime = rt
	return f, map[string]error{"container_runtime": err}
}

// golden compares the facts this package fills, under their document
// key, with testdata/golden/NAME.json.
func golden(t *testing.T, name, root string, f *facts.Facts) {
	t.Helper()
	collecttest.GoldenTree(t, name, root, map[string]any{"container_runtime": f.ContainerRuntime}, *update)
}

func TestHardenedTree(t *testing.T) {
	root := filepath.Join("testdata", "hardened")
	f, errs := gather(t, root)
	for name, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	fsys := collecttest.OpenFS(t, root)
	rt := f.ContainerRuntime
	if rt == nil || rt.Containerd == nil || rt.Docker == nil {
		t.Fatalf("container_runtime = %+v", rt)
	}
	c := rt.Containerd
	if c.ConfigVersion != 3 || !c.NvidiaRuntime || c.NvidiaBinary != "/usr/bin/nvidia-container-runtime" ||
		c.DefaultRuntime != "nvidia" || !c.CDIEnabled {
		t.Errorf("containerd = %+v", c)
	}
	if c.SystemdCgroup == nil || !*c.SystemdCgroup || c.NvidiaSystemdCgroup == nil || !*c.NvidiaSystemdCgroup {
		t.Errorf("containerd SystemdCgroup = %v, nvidia %v", c.SystemdCgroup, c.NvidiaSystemdCgroup)
	}
	if want := []string{fsys.Display("/etc/containerd/conf.d/99-nvidia.toml")}; !slices.Equal(c.Imports, want) {
		t.Errorf("imports = %v, want %v", c.Imports, want)
	}
	if d := rt.Docker; d.DefaultRuntime != "nvidia" || d.CgroupDriver != "systemd" || !d.CDIEnabled || !slices.Equal(d.Runtimes, []string{"nvidia"}) {
		t.Errorf("docker = %+v", d)
	}
	daemon := fsys.Display("/etc/docker/daemon.json")
	wantAt := map[string]collect.FileLine{"default_runtime": {File: daemon, Line: 2}, "cgroup_driver": {File: daemon, Line: 3},
		"cdi_enabled": {File: daemon, Line: 5}, "runtimes": {File: daemon, Line: 9}}
	if !maps.Equal(rt.Docker.Locations, wantAt) {
		t.Errorf("docker locations = %v, want %v", rt.Docker.Locations, wantAt)
	}
	if len(rt.CDISpecs) != 1 || rt.CDISpecs[0].Kind != "nvidia.com/gpu" || !slices.Equal(rt.CDISpecs[0].Devices, []string{"0", "1", "all"}) {
		t.Errorf("cdi = %+v", rt.CDISpecs)
	}
	golden(t, "hardened", root, f)
}

func TestWeakTree(t *testing.T) {
	root := filepath.Join("testdata", "weak")
	f, errs := gather(t, root)
	for name, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	c := f.ContainerRuntime.Containerd
	if c == nil || c.ConfigVersion != 2 || c.NvidiaRuntime || c.DefaultRuntime != "runc" || c.CDIEnabled ||
		c.SystemdCgroup == nil || *c.SystemdCgroup || c.NvidiaSystemdCgroup != nil || len(c.Imports) != 0 {
		t.Errorf("containerd = %+v", c)
	}
	if d := f.ContainerRuntime.Docker; d == nil || d.DefaultRuntime != "runc" || d.CgroupDriver != "cgroupfs" || d.CDIEnabled || len(d.Runtimes) != 0 {
		t.Errorf("docker = %+v", d)
	}
	// The exec-opts entry that names the driver is where a finding points.
	if l := f.ContainerRuntime.Docker.Locations; len(l) != 1 || l["cgroup_driver"] != (collect.FileLine{File: "/etc/docker/daemon.json", Line: 2}) {
		t.Errorf("docker locations = %v", l)
	}
	golden(t, "weak", root, f)
}

func TestEmptyRoot(t *testing.T) {
	f, errs := gather(t, t.TempDir())
	if s := collecttest.Status(errs["container_runtime"]); s != collect.StatusNotApplicable {
		t.Errorf("container_runtime status = %s (%v)", s, errs["container_runtime"])
	}
	if f.ContainerRuntime != nil {
		t.Errorf("facts filled without files: %+v", f.ContainerRuntime)
	}
}

func TestContainerdV2DropInUnderV3(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/containerd/config.toml": "version = 3\nimports = [\"conf.d/*.toml\"]\n",
		// nvidia-ctk before 1.18 style: a version 2 file.
		"/etc/containerd/conf.d/99-nvidia.toml": `version = 2
[plugins."io.containerd.grpc.v1.cri"]
enable_cdi = false
[plugins."io.containerd.grpc.v1.cri".containerd]
default_runtime_name = "nvidia"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
SystemdCgroup = true
`,
		"/etc/containerd/conf.d/README": "not a toml file",
	})
	fsys := collecttest.OpenFS(t, dir)
	c, err := LoadContainerd(fsys, ContainerdConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if !c.NvidiaRuntime || c.DefaultRuntime != "nvidia" || c.SystemdCgroup == nil || !*c.SystemdCgroup || c.CDIEnabled {
		t.Errorf("containerd = %+v", c)
	}
	if len(c.Imports) != 1 {
		t.Errorf("imports = %v", c.Imports)
	}
}

func TestContainerdNoVersionAndUnset(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/containerd/config.toml": "[plugins.cri.containerd.runtimes.gpu.options]\nBinaryName = \"/usr/bin/nvidia-container-runtime\"\n",
	})
	c, err := LoadContainerd(collecttest.OpenFS(t, dir), ContainerdConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if c.ConfigVersion != 1 || !c.NvidiaRuntime || c.NvidiaBinary != "/usr/bin/nvidia-container-runtime" ||
		c.SystemdCgroup != nil || c.NvidiaSystemdCgroup != nil || c.DefaultRuntime != "runc" || c.CDIEnabled {
		t.Errorf("containerd = %+v", c)
	}
}

func TestContainerdImportsOnlyWhatIsNamed(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/containerd/config.toml": "version = 3\n",
		"/etc/containerd/conf.d/99-nvidia.toml": "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]\n" +
			"runtime_type = \"io.containerd.runc.v2\"\n",
	})
	c, err := LoadContainerd(collecttest.OpenFS(t, dir), ContainerdConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if c.NvidiaRuntime || len(c.Imports) != 0 || !c.CDIEnabled {
		t.Errorf("containerd = %+v: a drop-in no import names was merged, or the v3 CDI default is wrong", c)
	}
}

func TestIncludeCycles(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/containerd/config.toml":       "version = 2\nimports = [\"a.toml\"]\n",
		"/etc/containerd/a.toml":            "imports = [\"b.toml\"]\n",
		"/etc/containerd/b.toml":            "imports = [\"a.toml\", \"/etc/containerd/config.toml\"]\n",
		"/etc/cdi/ignored-by-this-test.txt": "",
	})
	// containerd reads each file once, so a cycle simply ends.
	c, err := LoadContainerd(collecttest.OpenFS(t, dir), ContainerdConfigPath)
	if err != nil {
		t.Fatalf("containerd cycle: %v", err)
	}
	if len(c.Imports) != 2 {
		t.Errorf("imports = %v, want a.toml and b.toml once each", c.Imports)
	}
}

func TestCDIUnderRunWhenVarRunIsALink(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{
		"/run/cdi/vendor.json": `{"cdiVersion":"0.6.0","kind":"example.com/fpga","devices":[{"name":"f0","containerEdits":{}}]}`,
	})
	if err := os.MkdirAll(filepath.Join(dir, "var"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/run", filepath.Join(dir, "var", "run")); err != nil {
		t.Fatal(err)
	}
	f, errs := gather(t, dir)
	if errs["container_runtime"] != nil {
		t.Fatal(errs["container_runtime"])
	}
	specs := f.ContainerRuntime.CDISpecs
	if len(specs) != 1 || specs[0].Kind != "example.com/fpga" || !slices.Equal(specs[0].Devices, []string{"f0"}) {
		t.Errorf("cdi = %+v", specs)
	}
	if f.ContainerRuntime.Containerd != nil || f.ContainerRuntime.Docker != nil {
		t.Errorf("runtime = %+v", f.ContainerRuntime)
	}
}

func BenchmarkCollectorsHardened(b *testing.B) {
	fsys := collecttest.OpenFS(b, filepath.Join("testdata", "hardened"))
	env := &collect.Env{FS: fsys}
	ctx := context.Background()
	for b.Loop() {
		if _, err := CollectRuntime(ctx, env); err != nil {
			b.Fatal(err)
		}
	}
}

// TestNvidiaBinaryMustBeExecutable: a runtime's BinaryName counts only when
// it is an executable regular file inside the target, looked up on the
// shim's PATH when it is a bare command; a link out of the tree never
// reaches the build machine's own binary.
func TestNvidiaBinaryMustBeExecutable(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("usr/bin/nvidia-container-runtime", 0o755)
	write("usr/bin/not-executable", 0o644)
	if err := os.Symlink("/bin/sh", filepath.Join(dir, "usr/bin/escapes")); err != nil {
		t.Fatal(err)
	}
	fsys, closer, err := sysroot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	for name, want := range map[string]bool{
		"/usr/bin/nvidia-container-runtime": true,
		"nvidia-container-runtime":          true,
		"/usr/bin/not-executable":           false,
		"/usr/bin/missing":                  false,
		"/usr/bin/escapes":                  false,
	} {
		if got := executableIn(fsys, name); got != want {
			t.Errorf("executableIn(%q) = %v, want %v", name, got, want)
		}
	}
}
