package runtime

import (
	"maps"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

// TestContainerdLocations: each setting points at the line that set it
// last, through imports, a version 2 drop-in migrated under a version 3
// main file, dotted keys and inline tables; a setting left at its default
// has no line.
func TestContainerdLocations(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/containerd/config.toml": strings.Join([]string{
			"version = 3",                 // 1
			`imports = ["conf.d/*.toml"]`, // 2
			"",                            // 3
			"[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]",        // 4
			"  runtime_type = 'io.containerd.runc.v2'",                                 // 5
			"  options = { SystemdCgroup = false }",                                    // 6
			"[[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.list]]", // 7
			"  SystemdCgroup = true",                                                   // 8: in an array of tables, not the setting
		}, "\n") + "\n",
		// A version 2 drop-in: containerd moves its CRI settings to the
		// version 3 runtime plugin, and so do the lines.
		"/etc/containerd/conf.d/50-cdi.toml": strings.Join([]string{
			"version = 2",                           // 1
			`[plugins."io.containerd.grpc.v1.cri"]`, // 2
			"enable_cdi = true",                     // 3
		}, "\n") + "\n",
		"/etc/containerd/conf.d/99-nvidia.toml": strings.Join([]string{
			"version = 3", // 1
			"[plugins.'io.containerd.cri.v1.runtime'.containerd]",                      // 2
			"default_runtime_name = 'nvidia'",                                          // 3
			"runtimes.nvidia.options.BinaryName = '/usr/bin/nvidia-container-runtime'", // 4
			"runtimes.nvidia.options.SystemdCgroup = true",                             // 5
		}, "\n") + "\n",
	})
	c, err := LoadContainerd(collecttest.OpenFS(t, dir), ContainerdConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	main, cdi, nv := "/etc/containerd/config.toml", "/etc/containerd/conf.d/50-cdi.toml", "/etc/containerd/conf.d/99-nvidia.toml"
	want := map[string]collect.FileLine{
		"systemd_cgroup":        {File: main, Line: 6},
		"cdi_enabled":           {File: cdi, Line: 3},
		"default_runtime":       {File: nv, Line: 3},
		"nvidia_runtime":        {File: nv, Line: 4},
		"nvidia_binary":         {File: nv, Line: 4},
		"nvidia_systemd_cgroup": {File: nv, Line: 5},
	}
	// The default runtime is nvidia, whose SystemdCgroup line 5 sets.
	want["systemd_cgroup"] = collect.FileLine{File: nv, Line: 5}
	if !maps.Equal(c.Locations, want) {
		t.Errorf("locations:\n got %v\nwant %v", c.Locations, want)
	}
	if c.DefaultRuntime != "nvidia" || !c.CDIEnabled || c.SystemdCgroup == nil || !*c.SystemdCgroup {
		t.Errorf("containerd = %+v", c)
	}

	// Left at its defaults, nothing has a line.
	dir = collecttest.TempTree(t, map[string]string{"/etc/containerd/config.toml": "version = 3\n"})
	c, err = LoadContainerd(collecttest.OpenFS(t, dir), ContainerdConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if c.Locations != nil {
		t.Errorf("a default configuration has locations: %v", c.Locations)
	}
}

// TestTOMLLines: an inline table across lines, a
// quoted key, and lines counted in a file with CRLF endings.
func TestTOMLLines(t *testing.T) {
	doc := "a = 1\r\n[t]\r\n\"q.k\" = { x = 1,\r\n y = 2 }\r\n"
	lines, err := tomlLines("f.toml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		keys []string
		line int
	}{{[]string{"a"}, 1}, {[]string{"t"}, 2}, {[]string{"t", "q.k"}, 3}, {[]string{"t", "q.k", "y"}, 4}} {
		l, ok := lineOf(lines, tc.keys...)
		if !ok || l.Line != tc.line || l.File != "f.toml" {
			t.Errorf("%v: %v %v, want line %d", tc.keys, l, ok, tc.line)
		}
	}
	if _, ok := lineOf(lines, "t", "missing"); ok {
		t.Error("a key the file does not set has a line")
	}
	deep := strings.Repeat("[", 1) + strings.Repeat("a.", 200) + "a]\n"
	if _, err := tomlLines("deep.toml", []byte(deep)); err == nil || !strings.Contains(err.Error(), "deep.toml") {
		t.Errorf("a header 200 tables deep: %v", err)
	}
}
