package kubenode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// startContainerd runs containerd with its root, state, socket and
// configuration under dir. Its CRI pulls from o.Registry over plain HTTP
// (hosts.toml), and every runtime handler runs runc.
func startContainerd(t *testing.T, dir string, o Options) *testutil.Proc {
	t.Helper()
	bin := o.Containerd
	if bin == "" {
		bin = testutil.Tool(t, "containerd", "containerd")
	}
	runc := runcFor(t, dir)
	hosts := filepath.Join(dir, "certs.d")
	writeFile(t, filepath.Join(hosts, o.Registry, "hosts.toml"), fmt.Appendf(nil,
		"server = %q\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+o.Registry, "http://"+o.Registry))
	// The CRI reports its network ready only with a CNI configuration; the
	// node's pods are hostNetwork, so no plugin ever runs and none is
	// installed.
	cni := filepath.Join(dir, "cni")
	writeFile(t, filepath.Join(cni, "10-loopback.conflist"), []byte(`{"cniVersion":"0.4.0","name":"loopback","plugins":[{"type":"loopback"}]}`))
	var cfg strings.Builder
	fmt.Fprintf(&cfg, `version = 2
root = %q
state = %q
[grpc]
  address = %q
[plugins."io.containerd.internal.v1.opt"]
  path = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(dir, "containerd.sock"), filepath.Join(dir, "opt"), o.Pause,
		filepath.Join(dir, "cni-bin"), cni, hosts)
	for _, h := range append([]string{"runc"}, o.Handlers...) {
		fmt.Fprintf(&cfg, `  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s.options]
      BinaryName = %q
`, h, h, runc)
	}
	conf := filepath.Join(dir, "config.toml")
	writeFile(t, conf, []byte(cfg.String()))
	cmd := exec.Command(bin, "--config", conf)
	if o.Shim != "" {
		// containerd finds the shim of io.containerd.runc.v2 by its name on
		// PATH, where Debian's is too.
		shims := filepath.Join(dir, "shim-bin")
		if err := os.MkdirAll(shims, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(o.Shim, filepath.Join(shims, "containerd-shim-runc-v2")); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(os.Environ(), "PATH="+shims+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	p := testutil.Start(t, cmd)
	socket := filepath.Join(dir, "containerd.sock")
	p.WaitFor(t, time.Minute, "containerd's socket", func() bool {
		_, err := os.Stat(socket)
		return err == nil
	})
	return p
}

// runcFor is the runc containerd runs. Without CAP_SYS_RESOURCE (a
// container's root lacks it) no process may lower its OOM score below its
// own, yet the kubelet asks for -998 for every sandbox and a negative
// score for critical pods, which runc then fails to set ("failed to update
// /proc/self/oom_score_adj: Permission denied"). There, a wrapper raises
// such scores to the floor this process has before runc reads the spec;
// nothing else of the spec changes.
func runcFor(t *testing.T, dir string) string {
	t.Helper()
	runc := testutil.Tool(t, "runc", "runc")
	if hasCap(t, capSysResource) {
		return runc
	}
	floor, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		t.Fatal(err)
	}
	f, err := strconv.Atoi(strings.TrimSpace(string(floor)))
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "runc")
	script := fmt.Sprintf(`#!/bin/sh
prev=
for a in "$@"; do
  if [ "$prev" = --bundle ]; then
    sed -i -E 's/"oomScoreAdj":-?[0-9]+/"oomScoreAdj":%d/' "$a/config.json"
  fi
  prev=$a
done
exec %s "$@"
`, f, runc)
	if f < 0 {
		t.Fatalf("this process's OOM score %d is below zero; the wrapper would raise nothing", f)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}

const capSysResource = 24

// hasCap reports whether this process holds capability bit in its
// effective set.
func hasCap(t *testing.T, bit uint) bool {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			set, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return set&(1<<bit) != 0
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return false
}

// startKubelet runs the kubelet with the cgroupfs driver under cgroupRoot,
// its root directory and pod logs under dir, registered as o.Name at IP.
// It sends the node's status each 2s rather than 10s, so that what a
// device plugin registers reaches the scheduler at a test's pace.
func startKubelet(t *testing.T, bin, dir, kubeconfig, socket, cgroupRoot string, o Options) *testutil.Proc {
	t.Helper()
	labels := make([]string, 0, len(o.Labels))
	for k, v := range o.Labels {
		labels = append(labels, k+"="+v)
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
cgroupRoot: %q
failCgroupV1: false
failSwapOn: false
podLogsDir: %q
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: %q}}
authorization: {mode: AlwaysAllow}
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
containerRuntimeEndpoint: %q
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {}
nodeStatusUpdateFrequency: 2s
`, cgroupRoot, filepath.Join(dir, "pod-logs"), filepath.Join(filepath.Dir(kubeconfig), "kubelet-pki", "ca.crt"),
		testutil.FreePort(t), testutil.FreePort(t), "unix://"+socket)
	conf := filepath.Join(dir, "config.yaml")
	writeFile(t, conf, []byte(cfg))
	return testutil.Start(t, exec.Command(bin, "--config="+conf, "--root-dir="+dir, "--cert-dir="+filepath.Join(dir, "pki"), "--kubeconfig="+kubeconfig,
		"--hostname-override="+o.Name, "--node-ip="+IP, "--node-labels="+strings.Join(labels, ","), "--v=2"))
}
