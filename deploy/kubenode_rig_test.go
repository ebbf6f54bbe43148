package deploy

import (
	"archive/tar"
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpuhost/gpuhost/containers/seed/seedtest"
	"github.com/gpuhost/gpuhost/deploy/agentimage"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/kubeapi"
	"github.com/gpuhost/gpuhost/internal/testutil/kubenode"
)

// nodeRig is a started node with the agent's DaemonSet applied to it.
type nodeRig struct {
	node *kubenode.Node
	// host is the node's root the DaemonSet mounts, boot a tmpfs mounted
	// below it, and ds the DaemonSet as applied.
	host, boot string
	ds         []byte
	// pause is the pause image by digest in the node's registry.
	pause string
}

// startRealNode builds the agent's image, pushes it by digest to a
// registry the node pulls from, starts the node (o's runtime, the test's
// name, labels, registry and handlers), makes the node's root, and applies
// the DaemonSet as nodeDaemonSet renders it with node-marks.yaml, the
// ServiceMonitor and the PrometheusRule, the secrets and the nvidia
// RuntimeClass. It must run inside kubenode.Isolate.
func startRealNode(t *testing.T, o kubenode.Options) nodeRig {
	t.Helper()
	// nvmlmock: plain runc puts no NVIDIA library in the container, so the
	// agent asks gpumock's DGX A100 for its GPUs.
	agentBin := testutil.LeanAgent(t, "nvmlmock")
	reg := seedtest.New(t)
	pause := kubenode.PauseImage(t)
	reg.Write(t, "pause", "test", pause)
	pauseRef := reg.Host + "/pause@" + seedtest.Digest(t, pause)
	img, err := agentimage.Build(agentBase(t, agentBin), agentBin, agentimage.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	reg.Write(t, "gpuhost/gpuhost-agent", "test", img)
	ref := reg.Host + "/gpuhost/gpuhost-agent@" + seedtest.Digest(t, img)

	o.Name, o.Registry, o.Pause = realNode, reg.Host, pauseRef
	o.Labels = map[string]string{"nvidia.com/gpu.present": "true"}
	o.Handlers = []string{"nvidia"}
	node := kubenode.Start(t, o)
	t.Logf("node Ready %s after the cluster's start", node.Ready.Round(time.Millisecond))
	api := node.API
	host := filepath.Join(t.TempDir(), "host")
	if out, err := exec.Command("cp", "-a", "../cmd/gpuhost/testdata/rootfs-hardened", host).CombinedOutput(); err != nil {
		t.Fatalf("copying the node's root: %v\n%s", err, out)
	}
	if err := os.MkdirAll(filepath.Join(host, "etc/gpuhost"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The pins of the demo's Debian root, which the scan needs to pass.
	writeFile(t, filepath.Join(host, nodeParams), string(readFile(t, "../cmd/gpuhost/testdata/params-demo.yaml")))
	bake(t, host, filepath.Join(host, "etc/gpuhost/manifest.json"))
	// The kubelet's pod-resources socket where the DaemonSet's agent finds
	// it, under /host, read-only like everything below the node's root.
	bindReadOnly(t, filepath.Join(node.KubeletDir, "pod-resources"), filepath.Join(host, "var/lib/kubelet/pod-resources"))
	// A filesystem mounted below the node's root, as /boot is on a real
	// node: what recursiveReadOnly is for.
	sub := filepath.Join(host, "boot")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", sub, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(sub, unix.MNT_DETACH) })
	ds := nodeDaemonSet(t, ref, host, t.TempDir(), api)
	api.Apply(t, ds)
	applyCRDs(t, api)
	for _, f := range []string{"node-marks.yaml", "servicemonitor.yaml", "prometheusrule.yaml"} {
		api.Apply(t, readFile(t, filepath.Join("kubernetes", f)))
	}
	agentSecrets(t, api)
	api.Admin(t, http.MethodPost, "/apis/node.k8s.io/v1/runtimeclasses",
		map[string]any{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": map[string]any{"name": "nvidia"}, "handler": "nvidia"})
	return nodeRig{node: node, host: host, boot: sub, ds: ds, pause: pauseRef}
}

// agentBase is the image's base: GPUHOST_AGENT_BASE (a tar from
// agentimage.Base, mmdebstrap's Debian) when set, else a layer of the
// shared libraries this machine's loader gives the agent binary, which is
// all it needs to start.
func agentBase(t *testing.T, bin string) string {
	t.Helper()
	if p := os.Getenv("GPUHOST_AGENT_BASE"); p != "" {
		return p
	}
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", bin, err)
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range strings.Fields(string(out)) {
		if !strings.HasPrefix(f, "/") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f, "/"), Mode: 0o755, Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "base.tar")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// nodeParams is where the test puts the scan's parameters in the node's
// root.
const nodeParams = "etc/gpuhost/params.yaml"

// nodeDaemonSet renders the DaemonSet with image, the node's root at host
// and the history at state: the test's trees, not this machine's. It
// changes what the test's node and pace need, and logs each change:
//   - the node's root is a copy of a root filesystem, with no running host
//     behind it (no /proc of its own), so the agent judges it as one
//     (--rootfs=/host) with the pins of that root (--params);
//   - it scans every scanInterval, samples the GPUs every second, and the
//     kubelet probes its readiness every second, not hourly and minutely;
//   - --node-taint besides --node-label;
//   - no kube-proxy runs, so the Service address the kubelet gives the
//     pod reaches nothing: the API server's own address stands in.
func nodeDaemonSet(t *testing.T, image, host, state string, api *kubeapi.Server) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := RenderDaemonSet(&b, image); err != nil {
		t.Fatal(err)
	}
	ds := b.String()
	const arg, env = "            - ", "            - name: "
	for _, e := range []struct{ from, to string }{
		{"path: /\n", "path: " + host + "\n"},
		{"path: /var/lib/gpuhost\n", "path: " + state + "\n"},
		{arg + "--interval=1h\n", arg + "--interval=" + scanInterval.String() + "\n"},
		{arg + "--node-label\n", arg + "--node-label\n" + arg + "--node-taint\n" + arg + "--rootfs=/host\n" +
			arg + "--params=/host/" + nodeParams + "\n" + arg + "--gpu-interval=1s\n"},
		{"            periodSeconds: 60\n", "            periodSeconds: 1\n"},
		{"                  fieldPath: spec.nodeName\n", "                  fieldPath: spec.nodeName\n" +
			env + "KUBERNETES_SERVICE_HOST\n              value: " + strconv.Quote(api.Host) + "\n" +
			env + "KUBERNETES_SERVICE_PORT\n              value: " + strconv.Quote(strconv.Itoa(api.Port)) + "\n"},
	} {
		if strings.Count(ds, e.from) != 1 {
			t.Fatalf("the rendered DaemonSet has %d %q", strings.Count(ds, e.from), e.from)
		}
		ds = strings.Replace(ds, e.from, e.to, 1)
		t.Logf("the DaemonSet in the test: %q -> %q", strings.TrimSpace(e.from), strings.Join(strings.Fields(e.to), " "))
	}
	return []byte(ds)
}

// agentSecrets makes the agent's TLS pair and metrics token.
func agentSecrets(t *testing.T, api *kubeapi.Server) {
	t.Helper()
	dir := t.TempDir()
	ca := testutil.NewCA(t)
	cert, key, _ := testutil.WriteCert(t, dir, testutil.CertSpec{CA: ca, DNS: []string{"gpuhost-agent.gpuhost.svc"}})
	secret := func(name string, data map[string][]byte) {
		api.Admin(t, http.MethodPost, kubeapi.ResourcePath("v1", "Secret", "gpuhost"),
			map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name}, "data": data})
	}
	secret("gpuhost-agent-tls", map[string][]byte{"tls.crt": readFile(t, cert), "tls.key": readFile(t, key), "ca.crt": ca.PEM()})
	secret("gpuhost-agent-token", map[string][]byte{"token": []byte("real-node-test-token")})
}

// bindReadOnly binds src at dst (made if missing), read-only, until the
// test ends.
func bindReadOnly(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("binding %s at %s: %v", src, dst, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dst, unix.MNT_DETACH) })
	if err := unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("making %s read-only: %v", dst, err)
	}
}
