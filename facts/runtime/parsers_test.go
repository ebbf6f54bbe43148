package runtime

import (
	"maps"
	"testing"

	"github.com/gpuhost/gpuhost/facts/collect"
)

func TestMergeTOMLRecursive(t *testing.T) {
	dst := map[string]any{"a": map[string]any{"x": int64(1), "y": int64(2)}, "s": "old"}
	src := map[string]any{"a": map[string]any{"y": int64(3), "z": int64(4)}, "s": "new"}
	if err := MergeTOML(dst, src); err != nil {
		t.Fatal(err)
	}
	a := dst["a"].(map[string]any)
	if a["x"] != int64(1) || a["y"] != int64(3) || a["z"] != int64(4) || dst["s"] != "new" {
		t.Errorf("merged = %v", dst)
	}
}

func TestDecodeContainerdTOMLVersion(t *testing.T) {
	for _, in := range []string{"version = 4", "version = \"2\"", "imports = \"x\"", "imports = [1]"} {
		if _, err := DecodeContainerdTOML("c.toml", []byte(in)); err == nil {
			t.Errorf("%q decoded without error", in)
		}
	}
}

// Each setting daemon.json gives is placed on the line of its value: the
// exec-opts entry that names the cgroup driver, the last of a repeated key
// (the value encoding/json keeps).
func TestDockerDaemonLocations(t *testing.T) {
	data := []byte(`{
  "exec-opts": ["native.cgroupdriver=systemd"],
  "features": {"cdi": true},
  "default-runtime": "runc",
  "exec-opts": [
    "native.umask=normal",
    "native.cgroupdriver=cgroupfs"
  ],
  "features": {},
  "nested": {"default-runtime": "x", "exec-opts": ["native.cgroupdriver=y"]},
  "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}
}`)
	d, err := ParseDockerDaemon("/etc/docker/daemon.json", data)
	if err != nil {
		t.Fatal(err)
	}
	at := func(line int) collect.FileLine { return collect.FileLine{File: "/etc/docker/daemon.json", Line: line} }
	want := map[string]collect.FileLine{"cgroup_driver": at(7), "default_runtime": at(4), "runtimes": at(11)}
	if d.CgroupDriver != "cgroupfs" || d.CDIEnabled || !maps.Equal(d.Locations, want) {
		t.Errorf("driver %q cdi %v at %v, want cgroupfs false at %v", d.CgroupDriver, d.CDIEnabled, d.Locations, want)
	}
	d, err = ParseDockerDaemon("/etc/docker/daemon.json", []byte(`{"log-driver": "journald"}`))
	if err != nil || d.Locations != nil {
		t.Errorf("a file that sets nothing read has locations %v (%v)", d.Locations, err)
	}
}
