package runtime

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzContainerdTOML drives the decode, migrate, merge and extract steps over
// one file, used both as a main file and as a drop-in over a fixed base.
func FuzzContainerdTOML(f *testing.F) {
	f.Add([]byte("version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia.options]\nSystemdCgroup = true\n"))
	f.Add([]byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = true\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndefault_runtime_name = \"x\"\n"))
	f.Add([]byte("[plugins.cri.containerd.runtimes.runc]\noptions = 1\n"))
	f.Add([]byte("plugins = 3\n"))
	base := []byte("version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\nSystemdCgroup = false\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := DecodeContainerdTOML("fuzz.toml", data)
		if err != nil {
			return
		}
		// A file that decodes has lines; each is in the file.
		lines, err := tomlLines("fuzz.toml", data)
		if err != nil {
			if !strings.Contains(err.Error(), "nested deeper") {
				t.Fatalf("decodes but has no lines: %v", err)
			}
		} else if l, ok := firstLine(lines, 0); ok && (l.Line < 1 || l.Line > bytes.Count(data, []byte("\n"))+1) {
			t.Fatalf("line %d of a %d-line file", l.Line, bytes.Count(data, []byte("\n"))+1)
		}
		for _, version := range []int{2, 3} {
			main, err := DecodeContainerdTOML("base.toml", base)
			if err != nil {
				t.Fatal(err)
			}
			merged := map[string]any{}
			if err := MergeTOML(merged, main.Tree); err != nil {
				t.Fatal(err)
			}
			MigrateContainerd(file.Tree, file.Version, version)
			if err := MergeTOML(merged, file.Tree); err != nil {
				continue
			}
			s, err := ExtractContainerd(merged, version)
			if err != nil {
				continue
			}
			if s.DefaultRuntime == "" {
				t.Fatal("empty default runtime")
			}
			if !s.NvidiaRuntime && (s.NvidiaSystemdCgroup != nil || s.NvidiaBinary != "") {
				t.Fatal("nvidia fields without an nvidia runtime")
			}
		}
	})
}

// FuzzDockerDaemon: a daemon.json that parses places its settings on lines
// of the file, and only the settings it reads.
func FuzzDockerDaemon(f *testing.F) {
	f.Add([]byte(`{"exec-opts": ["native.cgroupdriver=systemd"], "features": {"cdi": true}}`))
	f.Add([]byte("{\n\"default-runtime\": \"nvidia\",\n\"runtimes\": {\"nvidia\": {}},\n\"exec-opts\": [\n\"native.cgroupdriver=cgroupfs\"]}\n"))
	f.Add([]byte(`{"exec-opts": [], "exec-opts": ["a=b"], "features": {"cdi": false}, "features": {}}`))
	f.Add([]byte(`{"default-runtime": "\u00e9\n"}`))
	known := map[string]bool{"default_runtime": true, "runtimes": true, "cgroup_driver": true, "cdi_enabled": true}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDockerDaemon("daemon.json", data)
		if err != nil {
			return
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for k, l := range d.Locations {
			if !known[k] || l.File != "daemon.json" || l.Line < 1 || l.Line > lines {
				t.Fatalf("%s at %s:%d of a %d-line file", k, l.File, l.Line, lines)
			}
		}
	})
}
