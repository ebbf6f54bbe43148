package agentimage

import (
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/agent/nodemark"
	"github.com/gpuhost/gpuhost/internal/testutil/kubeapi"
)

// testNode is the node the test's pod runs on.
const testNode = "gpu-node-1"

// podCluster is the cluster the agent's pod runs in: a real API server
// holding the rendered DaemonSet and node-marks.yaml, the node, and the
// pod the DaemonSet's controller would make there.
type podCluster struct {
	api *kubeapi.Server
	// saDir holds the pod's bound token and the CA, what the kubelet mounts
	// at /var/run/secrets/kubernetes.io/serviceaccount.
	saDir string
}

func startCluster(t *testing.T, daemonSet []byte) *podCluster {
	t.Helper()
	api := kubeapi.Start(t)
	api.Apply(t, daemonSet)
	marks, err := os.ReadFile("../kubernetes/node-marks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api.Apply(t, marks)
	api.Admin(t, http.MethodPost, "/apis/node.k8s.io/v1/runtimeclasses",
		map[string]any{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": map[string]any{"name": "nvidia"}, "handler": "nvidia"})
	api.Admin(t, http.MethodPost, "/api/v1/nodes", map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": testNode, "labels": map[string]any{"nvidia.com/gpu.present": "true"}},
	})
	pod := api.DaemonSetPod(t, "gpuhost", "gpuhost-agent", testNode)
	return &podCluster{api: api, saDir: api.ServiceAccountDir(t, api.Token(t, "gpuhost", "gpuhost-agent", &pod), "gpuhost")}
}

// env is what the kubelet adds to the container's environment: the API
// server's service address, and the downward API's spec.nodeName.
func (c *podCluster) env() []string {
	return []string{
		"KUBERNETES_SERVICE_HOST=" + c.api.Host,
		"KUBERNETES_SERVICE_PORT=" + strconv.Itoa(c.api.Port),
		"NODE_NAME=" + testNode,
	}
}

// judged holds the node to what the agent's log line says of its first
// run. The DaemonSet passes --node-label: a trusted run failing check must
// have labelled the node through the API server with the pod's token; an
// untrusted one (the test's host tree runs no systemd, so GH-NET-002
// cannot tell whether ufw is active and errors) must have left it alone.
func (c *podCluster) judged(t *testing.T, line, check string) {
	t.Helper()
	var n struct {
		Metadata struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(c.api.Admin(t, http.MethodGet, "/api/v1/nodes/"+testNode, nil), &n); err != nil {
		t.Fatal(err)
	}
	ours := func(m map[string]string) (keys []string) {
		for k := range m {
			if strings.HasPrefix(k, nodemark.Prefix) {
				keys = append(keys, k)
			}
		}
		return keys
	}
	switch {
	case strings.Contains(line, "could not be trusted"):
		if keys := append(ours(n.Metadata.Labels), ours(n.Metadata.Annotations)...); len(keys) > 0 {
			t.Errorf("an untrusted run marked the node: %v", keys)
		}
	case strings.Contains(line, "node marked noncompliant"):
		failing := strings.Split(n.Metadata.Annotations[nodemark.Annotation], ",")
		if n.Metadata.Labels[nodemark.Label] != "false" || !slices.Contains(failing, check) {
			t.Errorf("the agent says it marked the node, which carries %v %v", n.Metadata.Labels, n.Metadata.Annotations)
		}
	default:
		t.Errorf("the agent's node marks: %s", line)
	}
	t.Logf("node %s: %s", testNode, line)
}
