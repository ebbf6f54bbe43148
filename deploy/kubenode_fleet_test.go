package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/agent/nodemark"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/gpumock"
	"github.com/gpuhost/gpuhost/internal/testutil/kubeapi"
	"github.com/gpuhost/gpuhost/internal/testutil/kubenode"
)

// scrapedOnTheNode starts upstream Prometheus in the node's namespaces
// with the scrape job rendered from the ServiceMonitor the API server
// stores and the PrometheusRule's groups, as TestPrometheusFiresTheDriftAlert
// does, and waits until it scrapes the agent's pod the kubelet runs: up,
// a series for each GPU, and the drift series.
func scrapedOnTheNode(t *testing.T, api *kubeapi.Server, pod string) *promServer {
	t.Helper()
	bin := testutil.BuiltTool(t, "prometheus-upstream", "kube")
	dir := t.TempDir()
	writePrometheusConfig(t, api, dir)
	started := time.Now()
	prom := startPrometheusIn(t, bin, dir)
	on := fmt.Sprintf("node=%q", realNode)
	prom.waitFor(t, time.Minute, fmt.Sprintf(`up{job="gpuhost-agent", namespace="gpuhost", pod=%q, %s, endpoint="metrics"} == 1`, pod, on))
	prom.waitFor(t, time.Minute, fmt.Sprintf(`count(DCGM_FI_DEV_GPU_TEMP{%s, modelName=~".*A100.*"}) == %d`, on, gpumock.Count))
	prom.waitFor(t, time.Minute, fmt.Sprintf(`gpuhost_drift_checks_failing{%s} == 0`, on))
	t.Logf("up, GPU and drift series of pod %s in Prometheus %s after it started", pod, time.Since(started).Round(time.Millisecond))
	return prom
}

// driftAndMarksOnTheNode breaks the sshd configuration baked into the
// node's root, a high check then failing as well as the drift check: the
// drift alert must fire within two scan intervals, and the agent must mark
// its node (label, annotation, taint) through the API server, with the
// token the kubelet projected into its pod. Undoing the change resolves
// the alert and removes the marks.
func driftAndMarksOnTheNode(t *testing.T, kn *kubenode.Node, prom *promServer, host string) {
	t.Helper()
	podBoundToken(t, kn.API)
	if a := prom.alert(t, "GpuhostDriftDetected"); a != "" {
		t.Fatalf("GpuhostDriftDetected before any drift: %s", a)
	}
	if n := getNode(t, kn.API, realNode); marked(n) {
		t.Fatalf("%s carries the marks before any failure: %+v", realNode, n)
	}
	sshd := filepath.Join(host, "etc", "ssh", "sshd_config")
	orig := readFile(t, sshd)
	changed := time.Now()
	// sshd takes the first value it reads: this one wins over the baked one.
	if err := os.WriteFile(sshd, append([]byte("PermitRootLogin yes\n"), orig...), 0o600); err != nil {
		t.Fatal(err)
	}
	fired := prom.waitAlert(t, "GpuhostDriftDetected", "firing", 4*scanInterval)
	t.Logf("GpuhostDriftDetected firing %s after sshd_config changed (scan interval %s): %s", time.Since(changed).Round(time.Millisecond), scanInterval, fired)
	if took := time.Since(changed); took > 2*scanInterval {
		t.Errorf("the drift alert fired %s after the change, over two scan intervals (%s)", took.Round(time.Millisecond), 2*scanInterval)
	}
	n := waitNode(t, kn, 4*scanInterval, "marked", marked)
	t.Logf("%s marked %s after the change: label %s=%s, annotation %s=%s, taints %v", realNode, time.Since(changed).Round(time.Millisecond),
		nodemark.Label, n.Metadata.Labels[nodemark.Label], nodemark.Annotation, n.Metadata.Annotations[nodemark.Annotation], n.Spec.Taints)
	failing := strings.Split(n.Metadata.Annotations[nodemark.Annotation], ",")
	if n.Metadata.Labels[nodemark.Label] != "false" || !slices.Contains(failing, "GH-SSH-001") || !slices.Contains(failing, "GH-DRIFT-008") ||
		!slices.Contains(n.Spec.Taints, taint{Key: nodemark.Taint, Effect: "NoSchedule"}) {
		t.Errorf("%s is not marked as failing GH-SSH-001 and GH-DRIFT-008: %+v", realNode, n)
	}

	reverted := time.Now()
	if err := os.WriteFile(sshd, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	prom.waitAlert(t, "GpuhostDriftDetected", "", 4*scanInterval)
	t.Logf("GpuhostDriftDetected resolved %s after the revert", time.Since(reverted).Round(time.Millisecond))
	if took := time.Since(reverted); took > 2*scanInterval {
		t.Errorf("the drift alert resolved %s after the revert, over two scan intervals", took.Round(time.Millisecond))
	}
	n = waitNode(t, kn, 4*scanInterval, "unmarked", func(n node) bool { return !marked(n) })
	t.Logf("%s unmarked %s after the revert; labels %v, taints %v", realNode, time.Since(reverted).Round(time.Millisecond), n.Metadata.Labels, n.Spec.Taints)
	if _, ok := n.Metadata.Annotations[nodemark.Annotation]; ok {
		t.Errorf("the failing checks' annotation stays on %s: %v", realNode, n.Metadata.Annotations)
	}
}

// marked reports whether any of the agent's three marks is on the node.
func marked(n node) bool {
	_, label := n.Metadata.Labels[nodemark.Label]
	return label || n.Metadata.Annotations[nodemark.Annotation] != "" || n.hasTaint(nodemark.Taint)
}

// waitNode waits until the node is as done says, noticing a kubelet that
// exits.
func waitNode(t *testing.T, kn *kubenode.Node, timeout time.Duration, what string, done func(node) bool) node {
	t.Helper()
	var last node
	kn.Kubelet.WaitFor(t, timeout, realNode+" "+what, func() bool {
		last = getNode(t, kn.API, realNode)
		return done(last)
	})
	return last
}

// podBoundToken reads the service account token the kubelet projected into
// the agent's container, and asks the API server whose it is: the agent's
// account, on this node, which is what the admission policy of
// node-marks.yaml lets mark this node and no other.
func podBoundToken(t *testing.T, api *kubeapi.Server) {
	t.Helper()
	token := readFile(t, filepath.Join(agentProc(t), "root", "var/run/secrets/kubernetes.io/serviceaccount/token"))
	user, extra := api.WhoAmI(t, string(token))
	t.Logf("the agent's projected token: %s, node %v, pod %v", user, extra["authentication.kubernetes.io/node-name"], extra["authentication.kubernetes.io/pod-name"])
	if user != "system:serviceaccount:gpuhost:gpuhost-agent" || !slices.Equal(extra["authentication.kubernetes.io/node-name"], []string{realNode}) {
		t.Fatalf("the agent's token is %s with %v; want the agent's account bound to a pod on %s", user, extra, realNode)
	}
}
