package deploy

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/kubeapi"
)

// scanInterval is the agent's --interval in the test: the drift alert must
// fire within two of them.
const scanInterval = 6 * time.Second

// TestPrometheusFiresTheDriftAlert: a real Prometheus finds the
// agent through kubernetes_sd on a real API server, scrapes it as
// prometheus-operator would from the ServiceMonitor the API server stored
// (TLS with the ServiceMonitor's serverName and CA, the bearer token from
// its secret), evaluates the PrometheusRule's groups, and fires
// GpuhostDriftDetected when a baked config file of the node changes, then
// resolves it when the change is undone. No kubelet runs: the test makes
// the pod the DaemonSet would place on node-a, sets its status as a
// kubelet would (ready, on 127.0.0.1, where the agent listens).
func TestPrometheusFiresTheDriftAlert(t *testing.T) {
	t.Parallel()
	// Not Debian's prometheus, which has no Kubernetes discovery.
	bin := testutil.BuiltTool(t, "prometheus-upstream", "kube")
	api := kubeapi.Start(t)
	applyCRDs(t, api)
	applyManifests(t, api)
	port := testutil.FreePort(t)
	fa := startFleetAgent(t, port, scanInterval)
	runAgentPod(t, api, fa, port)

	dir := t.TempDir()
	writePrometheusConfig(t, api, dir)
	started := time.Now()
	prom := startPrometheusIn(t, bin, dir)
	t.Logf("prometheus ready in %s", time.Since(started).Round(time.Millisecond))

	prom.waitFor(t, time.Minute, `up{job="gpuhost-agent", namespace="gpuhost", pod="gpuhost-agent-node-a", node="node-a", endpoint="metrics"} == 1`)
	prom.waitFor(t, time.Minute, `count(DCGM_FI_DEV_GPU_TEMP{node="node-a", modelName=~".*A100.*"}) == 8`)
	prom.waitFor(t, time.Minute, `gpuhost_drift_checks_failing{node="node-a"} == 0`)
	t.Logf("up, GPU and drift series in Prometheus %s after it started; a drift scan took %s", time.Since(started).Round(time.Millisecond), (<-fa.Scans).Round(time.Millisecond))
	if a := prom.alert(t, "GpuhostDriftDetected"); a != "" {
		t.Fatalf("GpuhostDriftDetected before any drift: %s", a)
	}

	sshd := filepath.Join(fa.Root, "etc", "ssh", "sshd_config")
	orig := readFile(t, sshd)
	changed := time.Now()
	writeFile(t, sshd, string(orig)+"PermitRootLogin yes\n")
	fired := prom.waitAlert(t, "GpuhostDriftDetected", "firing", 4*scanInterval)
	t.Logf("GpuhostDriftDetected firing %s after sshd_config changed (scan interval %s): %s", time.Since(changed).Round(time.Millisecond), scanInterval, fired)
	if took := time.Since(changed); took > 2*scanInterval {
		t.Errorf("the drift alert fired %s after the change, over two scan intervals (%s)", took.Round(time.Millisecond), 2*scanInterval)
	}

	reverted := time.Now()
	writeFile(t, sshd, string(orig))
	prom.waitAlert(t, "GpuhostDriftDetected", "", 4*scanInterval)
	t.Logf("GpuhostDriftDetected resolved %s after the revert", time.Since(reverted).Round(time.Millisecond))
	if took := time.Since(reverted); took > 2*scanInterval {
		t.Errorf("the drift alert resolved %s after the revert, over two scan intervals", took.Round(time.Millisecond))
	}
}

// runAgentPod makes in the API server what a DaemonSet controller and a
// kubelet would: the secrets the pod mounts, the node, the pod (its port
// where the agent listens) and its ready status.
func runAgentPod(t *testing.T, api *kubeapi.Server, fa *fleetAgent, port int) {
	t.Helper()
	secret := func(name string, data map[string][]byte) {
		api.Admin(t, http.MethodPost, kubeapi.ResourcePath("v1", "Secret", "gpuhost"),
			map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name}, "data": data})
	}
	secret("gpuhost-agent-tls", map[string][]byte{"tls.crt": fa.Cert, "tls.key": fa.Key, "ca.crt": fa.CA})
	secret("gpuhost-agent-token", map[string][]byte{"token": fa.Token})
	api.Admin(t, http.MethodPost, "/apis/node.k8s.io/v1/runtimeclasses",
		map[string]any{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": map[string]any{"name": "nvidia"}, "handler": "nvidia"})
	api.Admin(t, http.MethodPost, "/api/v1/nodes", map[string]any{"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{"name": "node-a", "labels": map[string]any{"nvidia.com/gpu.present": "true"}}})

	// With hostNetwork the pod's port is the node's: the one the agent
	// listens on here, not 9108, which another test may hold.
	api.DaemonSetPod(t, "gpuhost", "gpuhost-agent", "node-a", func(spec map[string]any) {
		c := get(spec, "containers").([]any)[0].(map[string]any)
		c["ports"] = []any{map[string]any{"name": "metrics", "containerPort": port, "protocol": "TCP"}}
	})
	now := time.Now().UTC().Format(time.RFC3339)
	code, answer, err := api.Send("", http.MethodPatch, kubeapi.ResourcePath("v1", "Pod", "gpuhost")+"/gpuhost-agent-node-a/status", "application/merge-patch+json",
		[]byte(fmt.Sprintf(`{"status":{"phase":"Running","podIP":"127.0.0.1","podIPs":[{"ip":"127.0.0.1"}],"hostIP":"127.0.0.1","startTime":%q,
"conditions":[{"type":"Ready","status":"True","lastTransitionTime":%q},{"type":"ContainersReady","status":"True","lastTransitionTime":%q}],
"containerStatuses":[{"name":"agent","ready":true,"restartCount":0,"image":%q,"imageID":"","state":{"running":{"startedAt":%q}}}]}}`, now, now, now, testImage, now)))
	if err != nil || code != http.StatusOK {
		t.Fatalf("the pod's status: %d %v\n%s", code, err, answer)
	}
}

// promServer is a Prometheus the test started, answering on base.
type promServer struct {
	proc *testutil.Proc
	base string
}

func startPrometheusIn(t *testing.T, bin, dir string) *promServer {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	p := testutil.Start(t, exec.Command(bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr))
	s := &promServer{proc: p, base: "http://" + addr}
	p.WaitFor(t, time.Minute, "/-/ready", func() bool {
		resp, err := http.Get(s.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return s
}

// api calls Prometheus's HTTP API and decodes the data of a successful
// answer.
func (s *promServer) api(path string, params url.Values, data any) error {
	resp, err := http.Get(s.base + path + "?" + params.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Status, Error string
		Data          json.RawMessage
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: %d: %w", path, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s %v: %s", path, params, r.Error)
	}
	return json.Unmarshal(r.Data, data)
}

// waitFor waits for expr to return data, noticing a Prometheus that exits;
// on a timeout it shows the targets' state.
func (s *promServer) waitFor(t *testing.T, timeout time.Duration, expr string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	s.proc.WaitFor(t, timeout+time.Second, expr, func() bool {
		var data struct{ Result []json.RawMessage }
		if s.api("/api/v1/query", url.Values{"query": {expr}}, &data) == nil && len(data.Result) > 0 {
			return true
		}
		if time.Now().After(deadline) {
			var targets any
			s.api("/api/v1/targets", nil, &targets)
			t.Fatalf("no data for %s after %s; targets: %s", expr, timeout, mustJSON(t, targets))
		}
		return false
	})
}

// alert is the state and labels of the alert named, "" when it is neither
// pending nor firing.
func (s *promServer) alert(t *testing.T, name string) string {
	t.Helper()
	var data struct {
		Alerts []struct {
			Labels map[string]string
			State  string
		}
	}
	if err := s.api("/api/v1/alerts", nil, &data); err != nil {
		t.Fatal(err)
	}
	for _, a := range data.Alerts {
		if a.Labels["alertname"] == name {
			return a.State + " " + mustJSON(t, a.Labels)
		}
	}
	return ""
}

// waitAlert waits until the alert named is in state ("" for gone) and
// returns what /api/v1/alerts says of it.
func (s *promServer) waitAlert(t *testing.T, name, state string, timeout time.Duration) string {
	t.Helper()
	var got string
	s.proc.WaitFor(t, timeout, name+" "+strconv.Quote(state), func() bool {
		got = s.alert(t, name)
		return state == "" && got == "" || state != "" && strings.HasPrefix(got, state+" ")
	})
	return got
}

// decodeSecret is a secret's key as the API server holds it.
func decodeSecret(t *testing.T, api *kubeapi.Server, name, key string) []byte {
	t.Helper()
	var s struct{ Data map[string]string }
	getJSON(t, api, kubeapi.ResourcePath("v1", "Secret", "gpuhost")+"/"+name, &s)
	b, err := base64.StdEncoding.DecodeString(s.Data[key])
	if err != nil || len(b) == 0 {
		t.Fatalf("secret %s key %s: %v", name, key, err)
	}
	return b
}

func writeFileIn(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
