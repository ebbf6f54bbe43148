package deploy

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/kubenode"
)

// TestDaemonSetOnContainerd2 runs the DaemonSet as rendered
// (recursiveReadOnly: Enabled), with a filesystem mounted below the node's
// root, on containerd 2 built from source (make kube) over Debian's runc:
// where containerd 1.6 makes the kubelet refuse the pod, containerd 2 must
// make every mount below /host read-only in the container, so the agent,
// which refuses a writable host, runs and the pod is Ready.
func TestDaemonSetOnContainerd2(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a cluster and a kubelet (make test runs it)")
	}
	if !kubenode.Isolate(t) {
		return
	}
	ctrd := testutil.BuiltTool(t, "containerd2", "kube")
	shim := testutil.BuiltTool(t, "containerd2-shim-runc-v2", "kube")
	rig := startRealNode(t, kubenode.Options{Containerd: ctrd, Shim: shim})
	var versions []string
	for _, c := range [][]string{{ctrd, "--version"}, {"runc", "--version"}, {"uname", "-r"}} {
		out, err := exec.Command(c[0], c[1:]...).Output()
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		versions = append(versions, strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0])
	}
	t.Logf("runtime: %s", strings.Join(versions, "; "))

	applied := time.Now()
	// A refusal of the rendered spec (CreateContainerError and the like)
	// ends the wait at once. RunContainerError is the runtime failing to
	// start a task, which the kubelet retries; it fails the test only by
	// lasting to the deadline.
	var transient []string
	p := waitPod(t, rig.node, 3*time.Minute, func(p agentPod) bool {
		r := p.waitingReason()
		if r == "RunContainerError" {
			if m := p.waitingMessage(); !slices.Contains(transient, m) {
				transient = append(transient, m)
				t.Logf("the kubelet retries: %s: %s", r, m)
			}
			return false
		}
		return p.ready() || r != "" && r != "ContainerCreating"
	})
	if !p.ready() {
		t.Fatalf("the DaemonSet as rendered on containerd 2: pod %s %s, waiting %s: %s", p.Metadata.Name, p.Status.Phase, p.waitingReason(), p.waitingMessage())
	}
	mounts := agentMounts(t)
	t.Logf("recursiveReadOnly: Enabled on containerd 2: pod %s Ready %s after the DaemonSet was applied; in the container /host is %v, /host/boot %v",
		p.Metadata.Name, time.Since(applied).Round(time.Millisecond), mounts["/host"], mounts["/host/boot"])
	for _, m := range []string{"/host", "/host/boot", "/host/var/lib/kubelet/pod-resources"} {
		if !slices.Contains(mounts[m], "ro") {
			t.Errorf("%s is mounted %v in the agent's container, want ro", m, mounts[m])
		}
	}
	log := rig.node.ContainerLog(t, "gpuhost", p.Metadata.Name, "agent")
	if !strings.Contains(log, "run complete") || strings.Contains(log, "is writable through") {
		t.Errorf("the agent's log shows no completed scan, or a writable host:\n%s", log)
	}
}
