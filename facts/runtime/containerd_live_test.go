package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

// liveRoot is a host root with a containerd process (pid 4242, started with
// argv) in a fake /proc, the default config.toml without the nvidia
// runtime, and /etc/containerd/gpu.toml with it.
func liveRoot(t *testing.T, argv ...string) string {
	t.Helper()
	return collecttest.TempTree(t, map[string]string{
		"proc/4242/comm":             "containerd\n",
		"proc/4242/cmdline":          strings.Join(argv, "\x00") + "\x00",
		"proc/77/comm":               "containerd-shim\n",
		"proc/77/cmdline":            "/usr/bin/containerd-shim\x00",
		"etc/containerd/config.toml": "version = 2\n",
		"etc/containerd/gpu.toml":    "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndefault_runtime_name = \"nvidia\"\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\nruntime_type = \"io.containerd.runc.v2\"\n",
	})
}

func collectRuntime(t *testing.T, root string, live bool) (*facts.Facts, error) {
	t.Helper()
	rt, err := CollectRuntime(context.Background(), &collect.Env{FS: collecttest.OpenFS(t, root), Live: live})
	f := newDoc(facts.KindRootfs)
	if live {
		f.Target.Kind = facts.KindHost
	}
	f.ContainerRuntime = rt
	return f, err
}

// TestLiveContainerdReadsItsOwnConfig: on a live host the containerd that
// runs with --config gpu.toml is judged by gpu.toml, not by the default
// file beside it; a rootfs keeps reading the default file.
func TestLiveContainerdReadsItsOwnConfig(t *testing.T) {
	for _, argv := range [][]string{
		{"/usr/bin/containerd", "--config", "/etc/containerd/gpu.toml"},
		{"/usr/bin/containerd", "-c", "/etc/containerd/gpu.toml"},
		{"/usr/bin/containerd", "--config=/etc/containerd/gpu.toml", "--log-level", "info"},
	} {
		f, err := collectRuntime(t, liveRoot(t, argv...), true)
		if err != nil {
			t.Fatalf("%q: %v", argv, err)
		}
		c := f.ContainerRuntime.Containerd
		if c == nil || c.Source != "process" || c.PID != 4242 || !strings.HasSuffix(c.ConfigPath, "/etc/containerd/gpu.toml") || !c.NvidiaRuntime {
			t.Errorf("%q: containerd facts %+v; want gpu.toml from pid 4242 with the nvidia runtime", argv, c)
		}
	}
	f, err := collectRuntime(t, liveRoot(t, "/usr/bin/containerd", "--config", "/etc/containerd/gpu.toml"), false)
	if err != nil {
		t.Fatal(err)
	}
	if c := f.ContainerRuntime.Containerd; c == nil || c.Source != "file" || !strings.HasSuffix(c.ConfigPath, "/etc/containerd/config.toml") || c.NvidiaRuntime {
		t.Errorf("rootfs: containerd facts %+v; want the default file", c)
	}
}

// TestLiveContainerdWithoutItsConfig: a running containerd whose --config
// is missing runs on defaults; the collector says so instead of judging the
// default file.
func TestLiveContainerdWithoutItsConfig(t *testing.T) {
	_, err := collectRuntime(t, liveRoot(t, "/usr/bin/containerd", "--config", "/etc/containerd/missing.toml"), true)
	if err == nil || !strings.Contains(err.Error(), "containerd pid 4242") || !strings.Contains(err.Error(), "missing.toml") {
		t.Fatalf("collect = %v; want an error naming the daemon and its file", err)
	}
}

func TestContainerdCommandLine(t *testing.T) {
	for argv, want := range map[string]string{
		"containerd":                        ContainerdConfigPath,
		"containerd --config /a.toml":       "/a.toml",
		"containerd -c=/b.toml":             "/b.toml",
		"containerd --log-level debug":      ContainerdConfigPath,
		"containerd --config /a -c /second": "/second",
	} {
		got, err := ContainerdCommandLine(strings.Fields(argv))
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", argv, got, err, want)
		}
	}
	if _, err := ContainerdCommandLine([]string{"containerd", "--config"}); err == nil {
		t.Error("--config without a file accepted")
	}
}
