package deploy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a cluster and a kubelet (make test runs it)")
	}
	if !kubenode.Isolate(t) {
		return
	}
	rig := startRealNode(t, kubenode.Options{})
	node, api, host, sub, ds := rig.node, rig.node.API, rig.host, rig.boot, rig.ds

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
	gpuHolderOnTheNode(t, node, prom, rig.pause)
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
