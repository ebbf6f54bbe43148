package deploy

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

const realNode = "gpu-node-1"

// TestDaemonSetOnARealNode runs the rendered DaemonSet on a real kubelet
// over Debian's containerd and runc, the agent's image pulled by digest
// from a registry. containerd 1.6 cannot make recursive read-only mounts,
// so the kubelet must refuse the pod as rendered (recursiveReadOnly:
// Enabled) rather than run it with a writable host. With readOnly alone
// and a filesystem mounted below the node's root, that one stays
// writable in the container, and the agent must refuse to run, naming
// it; with nothing mounted below, the pod must become Ready, its agent
// having scanned the node's root through /host. Then, on that pod: a
// real Prometheus scrapes it and fires and resolves the drift alert, the
// agent marks and unmarks its node with the token the kubelet projects,
// and labels the GPU a stand-in device plugin gave a workload with that
// workload's pod.
func TestDaemonSetOnARealNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster and a kubelet (make test runs it)")
	}
	if !kubenode.Isolate(t) {
		return
	}
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

	node := kubenode.Start(t, kubenode.Options{
		Name:     realNode,
		Labels:   map[string]string{"nvidia.com/gpu.present": "true"},
		Registry: reg.Host,
		Pause:    pauseRef,
		Handlers: []string{"nvidia"},
	})
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

	// As rendered: the kubelet must refuse the container.
	refused := waitPod(t, node, 3*time.Minute, func(p agentPod) bool { return p.waitingReason() == "CreateContainerConfigError" })
	t.Logf("recursiveReadOnly: Enabled on containerd 1.6: %s: %s", refused.waitingReason(), refused.waitingMessage())
	if !strings.Contains(refused.waitingMessage(), "recursive read-only") {
		t.Errorf("the container waits for another reason than recursive read-only: %s", refused.waitingMessage())
	}
	if refused.Status.Phase == "Running" || refused.ready() {
		t.Fatalf("the pod runs without recursive read-only mounts: %+v", refused.Status)
	}

	// readOnly alone: the container runs, /host read-only and /host/boot
	// writable below it, and the agent refuses to run, naming the mount.
	api.Admin(t, http.MethodDelete, kubeapi.ResourcePath("apps/v1", "DaemonSet", "gpuhost")+"/gpuhost-agent", nil)
	waitPod(t, node, 2*time.Minute, func(p agentPod) bool { return p.Metadata.Name == "" })
	api.Apply(t, bytes.ReplaceAll(ds, []byte("recursiveReadOnly: Enabled"), nil))
	crashing := waitPod(t, node, 5*time.Minute, func(p agentPod) bool { return p.waitingReason() == "CrashLoopBackOff" })
	log := node.ContainerLog(t, "gpuhost", crashing.Metadata.Name, "agent")
	const refusal = "--host-root /host is writable through /host/boot"
	if !strings.Contains(log, refusal) || strings.Contains(log, "run complete") {
		t.Errorf("with /host/boot writable the agent does not refuse with %q:\n%s", refusal, log)
	}
	t.Logf("readOnly without recursiveReadOnly, /boot mounted below the node's root: %s", firstLine(log, refusal))

	// Nothing writable mounted below the node's root: readOnly alone makes
	// all of /host read-only, and the pod is Ready once the agent's first
	// scan of /host is done.
	if err := unix.Unmount(sub, 0); err != nil {
		t.Fatal(err)
	}
	api.Admin(t, http.MethodDelete, kubeapi.ResourcePath("v1", "Pod", "gpuhost")+"/"+crashing.Metadata.Name, nil)
	applied := time.Now()
	ready := waitPod(t, node, 5*time.Minute, func(p agentPod) bool { return p.Metadata.Name != crashing.Metadata.Name && p.ready() })
	t.Logf("pod %s Ready %s after the crashing pod was deleted", ready.Metadata.Name, time.Since(applied).Round(time.Millisecond))
	// Ready means a run completed: the agent scanned the node's root
	// through /host against the baseline baked there.
	log = node.ContainerLog(t, "gpuhost", ready.Metadata.Name, "agent")
	for line := range strings.Lines(log) {
		if strings.Contains(line, "run complete") || strings.Contains(line, "scan failed") || strings.Contains(line, "level=ERROR") {
			t.Logf("agent: %s", strings.TrimSpace(line))
		}
	}
	if !strings.Contains(log, "run complete") || strings.Contains(log, "scan failed") {
		t.Errorf("the agent's log shows no completed scan:\n%s", log)
	}
	mounts := agentMounts(t)
	if !slices.Contains(mounts["/host"], "ro") {
		t.Errorf("/host is mounted %v in the agent's container, want ro", mounts["/host"])
	}

	prom := scrapedOnTheNode(t, api, ready.Metadata.Name)
	driftAndMarksOnTheNode(t, node, prom, host)
	gpuHolderOnTheNode(t, node, prom, pauseRef)
}

// firstLine is the first line of s that contains sub.
func firstLine(s, sub string) string {
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// agentMounts reads the agent's mount table, from its process in this
// PID namespace: each mount point inside the container with its options.
func agentMounts(t *testing.T) map[string][]string {
	t.Helper()
	info, err := os.ReadFile(filepath.Join(agentProc(t), "mountinfo"))
	if err != nil {
		t.Fatal(err)
	}
	mounts := map[string][]string{}
	for line := range strings.Lines(string(info)) {
		if fields := strings.Fields(line); len(fields) > 5 {
			mounts[fields[4]] = strings.Split(fields[5], ",")
		}
	}
	return mounts
}

// agentProc is the /proc directory of the agent's process in this PID
// namespace.
func agentProc(t *testing.T) string {
	t.Helper()
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte("--host-root=/host")) {
			return filepath.Dir(f)
		}
	}
	t.Fatal("no agent process in the test's PID namespace")
	return ""
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

// agentPod is what the test reads of the DaemonSet's pod.
type agentPod struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Status struct {
		Phase      string `json:"phase"`
		Conditions []struct {
			Type, Status string
		} `json:"conditions"`
		ContainerStatuses []struct {
			State struct {
				Waiting *struct {
					Reason, Message string
				} `json:"waiting"`
			} `json:"state"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

func (p agentPod) ready() bool {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

func (p agentPod) waitingReason() string {
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Waiting != nil {
			return c.State.Waiting.Reason
		}
	}
	return ""
}

func (p agentPod) waitingMessage() string {
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Waiting != nil {
			return c.State.Waiting.Message
		}
	}
	return ""
}

// waitPod waits until the DaemonSet's pod (zero when there is none) is as
// done says, and fails with the kubelet's recent output if it is not in
// time or the kubelet exits.
func waitPod(t *testing.T, node *kubenode.Node, timeout time.Duration, done func(agentPod) bool) agentPod {
	t.Helper()
	var last agentPod
	node.Kubelet.WaitFor(t, timeout, "the agent's pod", func() bool {
		var list struct {
			Items []agentPod `json:"items"`
		}
		code, body, err := node.API.Send("", http.MethodGet, kubeapi.ResourcePath("v1", "Pod", "gpuhost")+"?labelSelector=app.kubernetes.io/name%3Dgpuhost-agent", "", nil)
		if err != nil || code != http.StatusOK || json.Unmarshal(body, &list) != nil {
			return false
		}
		last = agentPod{}
		if len(list.Items) > 0 {
			last = list.Items[0]
		}
		return done(last)
	})
	return last
}
