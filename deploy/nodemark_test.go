package deploy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/agent"
	"github.com/gpuhost/gpuhost/agent/nodemark"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/kubeapi"
	"github.com/gpuhost/gpuhost/reports"
)

// node is what the tests read of a Node object.
type node struct {
	Metadata struct {
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
		ResourceVersion string            `json:"resourceVersion"`
	} `json:"metadata"`
	Spec struct {
		Taints        []taint `json:"taints"`
		Unschedulable bool    `json:"unschedulable"`
	} `json:"spec"`
}

type taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

func getNode(t *testing.T, api *kubeapi.Server, name string) node {
	t.Helper()
	var n node
	if err := json.Unmarshal(api.Admin(t, http.MethodGet, "/api/v1/nodes/"+name, nil), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (n node) hasTaint(key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(tn taint) bool { return tn.Key == key })
}

// TestNodeMarkingOnARealAPIServer runs the agent's node marking against a
// real kube-apiserver and etcd, with the RBAC and admission policy of
// kubernetes/node-marks.yaml and the DaemonSet's own pod and token.
func TestNodeMarkingOnARealAPIServer(t *testing.T) {
	api := kubeapi.Start(t)
	t.Logf("kube-apiserver ready in %s", api.Ready.Round(time.Millisecond))
	setUpCluster(t, api)

	// The pod the DaemonSet would run on node-a, and the token its kubelet
	// would mount: the API server must know it as the agent on node-a.
	pod := api.DaemonSetPod(t, "gpuhost", "gpuhost-agent", "node-a")
	if !strings.Contains(mustJSON(t, pod.Spec["volumes"]), `"path":"token"`) {
		t.Errorf("the agent's pod has no service account token volume: %s", mustJSON(t, pod.Spec["volumes"]))
	}
	token := api.Token(t, "gpuhost", "gpuhost-agent", &pod)
	user, extra := api.WhoAmI(t, token)
	if user != "system:serviceaccount:gpuhost:gpuhost-agent" || !slices.Equal(extra["authentication.kubernetes.io/node-name"], []string{"node-a"}) {
		t.Fatalf("the pod's token is %s with extra %v; want the agent on node-a", user, extra)
	}

	policyEnforced(t, api, token)

	saDir := api.ServiceAccountDir(t, token, "gpuhost")
	t.Setenv("KUBERNETES_SERVICE_HOST", api.Host)
	t.Setenv("KUBERNETES_SERVICE_PORT", strconv.Itoa(api.Port))
	marker, err := nodemark.New("node-a", nodemark.WithLabel(), nodemark.WithTaint(), nodemark.WithServiceAccountDir(saDir))
	if err != nil {
		t.Fatal(err)
	}
	ag := newRunner(t, marker)

	// 1. A failing run marks node-a, beside what it carried already.
	ag.run(t, failingReport(), nil)
	a := getNode(t, api, "node-a")
	if a.Metadata.Labels[nodemark.Label] != "false" || a.Metadata.Annotations[nodemark.Annotation] != "GH-SSH-001,GH-TLS-002" ||
		!a.hasTaint(nodemark.Taint) || !a.hasTaint("nvidia.com/gpu") || a.Metadata.Labels["nvidia.com/gpu.present"] != "true" {
		t.Fatalf("node-a after a failing run: %+v", a)
	}

	// 2. Neither a run that finds the marks in place nor an untrusted run
	// writes anything: the object's version stays.
	ag.run(t, failingReport(), nil)
	ag.run(t, nil, errors.New("the ssh collector could not read sshd_config"))
	if again := getNode(t, api, "node-a"); again.Metadata.ResourceVersion != a.Metadata.ResourceVersion || !again.hasTaint(nodemark.Taint) {
		t.Errorf("an untrusted run changed node-a: resourceVersion %s -> %s, %+v", a.Metadata.ResourceVersion, again.Metadata.ResourceVersion, again)
	}

	// 3. Passing again removes all three marks, and only them.
	ag.run(t, nodeReport(reports.Result{ID: "GH-NET-001", Severity: "medium", Status: reports.StatusFail}), nil)
	a = getNode(t, api, "node-a")
	if _, ok := a.Metadata.Labels[nodemark.Label]; ok || a.Metadata.Annotations[nodemark.Annotation] != "" || a.hasTaint(nodemark.Taint) ||
		!a.hasTaint("nvidia.com/gpu") || a.Metadata.Labels["nvidia.com/gpu.present"] != "true" {
		t.Fatalf("node-a after a passing run: %+v", a)
	}

	// 4. The token is read afresh each run: a rotated one is used, a
	// broken one is refused and counted.
	writeFile(t, filepath.Join(saDir, "token"), "not-a-token")
	ag.run(t, failingReport(), nil)
	writeFile(t, filepath.Join(saDir, "token"), api.Token(t, "gpuhost", "gpuhost-agent", &pod))
	ag.run(t, failingReport(), nil)
	if a = getNode(t, api, "node-a"); !a.hasTaint(nodemark.Taint) {
		t.Errorf("the rotated token did not mark node-a: %+v", a)
	}
	metrics := ag.metrics(t)
	for _, want := range []string{"gpuhost_node_marked 1", "gpuhost_node_mark_errors_total 1"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	deniedOutsideItsOwnMarks(t, api, token, saDir)
	keepsATaintAddedMeanwhile(t, api, token)
}

// keepsATaintAddedMeanwhile: another client taints node-a between the
// marker's read and its patch. The API server refuses the patch, whose
// resourceVersion is stale, and the marker reads again and patches again,
// so the other taint stays. A proxy in front of the API server, on the
// pod's service address, makes the change just before it forwards the
// marker's first patch.
func keepsATaintAddedMeanwhile(t *testing.T, api *kubeapi.Server, token string) {
	upstream, err := url.Parse(fmt.Sprintf("https://%s", net.JoinHostPort(api.Host, strconv.Itoa(api.Port))))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(api.CA)
	rp := httputil.NewSingleHostReverseProxy(upstream)
	rp.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}}
	var mu sync.Mutex
	var seen []string
	var meanwhile error
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method)
		if r.Method == http.MethodPatch && meanwhile == nil && !slices.Contains(seen[:len(seen)-1], http.MethodPatch) {
			code, body, err := api.Send("", http.MethodPatch, "/api/v1/nodes/node-a", "application/json-patch+json",
				[]byte(`[{"op":"add","path":"/spec/taints/-","value":{"key":"example.com/maintenance","effect":"NoSchedule"}}]`))
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("%d %s", code, body)
			}
			meanwhile = err
		}
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	ca := testutil.NewCA(t)
	_, _, pair := testutil.WriteCert(t, t.TempDir(), testutil.CertSpec{CA: ca, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS13}
	srv.StartTLS()
	defer srv.Close()
	saDir := t.TempDir()
	writeFile(t, filepath.Join(saDir, "token"), token)
	writeFile(t, filepath.Join(saDir, "ca.crt"), string(ca.PEM()))
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	t.Setenv("KUBERNETES_SERVICE_HOST", host)
	t.Setenv("KUBERNETES_SERVICE_PORT", port)
	marker, err := nodemark.New("node-a", nodemark.WithLabel(), nodemark.WithTaint(), nodemark.WithServiceAccountDir(saDir))
	if err != nil {
		t.Fatal(err)
	}
	if err := marker.Mark(context.Background(), nil); err != nil {
		t.Fatalf("unmarking with a taint added meanwhile: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if meanwhile != nil {
		t.Fatalf("the other client's taint: %v", meanwhile)
	}
	a := getNode(t, api, "node-a")
	if !slices.Equal(seen, []string{"GET", "PATCH", "GET", "PATCH"}) || !a.hasTaint("example.com/maintenance") || a.hasTaint(nodemark.Taint) {
		t.Errorf("requests %v; node-a %+v; want a refused patch, a fresh read, and the other taint kept", seen, a)
	}
	t.Logf("a taint added between read and patch: requests %v, node-a's taints %v", seen, a.Spec.Taints)
}

// deniedOutsideItsOwnMarks: the same token may not mark another node nor
// change anything of its own node but the gpuhost.dev/ marks; a token not
// bound to a pod may mark nothing, and another account is not let in by
// RBAC at all.
func deniedOutsideItsOwnMarks(t *testing.T, api *kubeapi.Server, token, saDir string) {
	b := getNode(t, api, "node-b")
	other, err := nodemark.New("node-b", nodemark.WithLabel(), nodemark.WithTaint(), nodemark.WithServiceAccountDir(saDir))
	if err != nil {
		t.Fatal(err)
	}
	var se *nodemark.StatusError
	err = other.Mark(context.Background(), []string{"GH-SSH-001"})
	if !errors.As(err, &se) || se.Code != http.StatusForbidden || !strings.Contains(se.Message, "only the node its pod runs on") {
		t.Errorf("marking node-b with node-a's token: %v", err)
	} else {
		t.Logf("node-b with node-a's token: %v", err)
	}
	if after := getNode(t, api, "node-b"); after.Metadata.ResourceVersion != b.Metadata.ResourceVersion {
		t.Errorf("node-b changed: %+v", after)
	}

	for _, c := range []struct{ what, patch, want string }{
		{"another label", `{"metadata":{"labels":{"team":"ml"}}}`, "only gpuhost.dev/ labels"},
		{"a label it found", `{"metadata":{"labels":{"nvidia.com/gpu.present":null}}}`, "only gpuhost.dev/ labels"},
		{"another annotation", `{"metadata":{"annotations":{"note":"x"}}}`, "only gpuhost.dev/ annotations"},
		{"the others' taints", `{"spec":{"taints":[{"key":"gpuhost.dev/noncompliant","effect":"NoSchedule"}]}}`, "only gpuhost.dev/ taints"},
		{"a cordon", `{"spec":{"unschedulable":true}}`, "may not cordon"},
	} {
		code, body := api.As(t, token, http.MethodPatch, "/api/v1/nodes/node-a", "application/strategic-merge-patch+json", []byte(c.patch))
		if code != http.StatusForbidden || !strings.Contains(string(body), c.want) {
			t.Errorf("%s on node-a: %d %s; want 403 saying %q", c.what, code, body, c.want)
		} else {
			t.Logf("%s on node-a: %d %s", c.what, code, statusMessage(body))
		}
	}

	unbound := api.Token(t, "gpuhost", "gpuhost-agent", nil)
	code, body := api.As(t, unbound, http.MethodPatch, "/api/v1/nodes/node-a", "application/strategic-merge-patch+json", []byte(`{"metadata":{"labels":{"gpuhost.dev/compliant":"false"}}}`))
	if code != http.StatusForbidden {
		t.Errorf("a token bound to no pod marked node-a: %d %s", code, body)
	} else {
		t.Logf("a token bound to no pod: %d %s", code, statusMessage(body))
	}
	api.Admin(t, http.MethodPost, "/api/v1/namespaces/gpuhost/serviceaccounts",
		map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "other"}})
	for _, c := range []struct{ token, method, path string }{
		{token, http.MethodGet, "/api/v1/namespaces/gpuhost/secrets"},
		{token, http.MethodGet, "/api/v1/nodes"},
		{token, http.MethodDelete, "/api/v1/nodes/node-a"},
		{token, http.MethodPatch, "/api/v1/nodes/node-a/status"},
		{api.Token(t, "gpuhost", "other", nil), http.MethodPatch, "/api/v1/nodes/node-a"},
	} {
		code, body := api.As(t, c.token, c.method, c.path, "application/strategic-merge-patch+json", []byte(`{"metadata":{"labels":{"gpuhost.dev/compliant":"false"}}}`))
		if code != http.StatusForbidden {
			t.Errorf("%s %s: %d %s; want RBAC's 403", c.method, c.path, code, body)
		} else {
			t.Logf("%s %s: %d %s", c.method, c.path, code, statusMessage(body))
		}
	}
}

// policyEnforced waits until the API server enforces the admission policy
// just applied (it loads policies from a watch, not at once), probing with
// a cordon as a dry run, which admission judges but nothing stores.
func policyEnforced(t *testing.T, api *kubeapi.Server, token string) {
	t.Helper()
	start := time.Now()
	for {
		code, body := api.As(t, token, http.MethodPatch, "/api/v1/nodes/node-a?dryRun=All", "application/strategic-merge-patch+json", []byte(`{"spec":{"unschedulable":true}}`))
		if code == http.StatusForbidden {
			t.Logf("admission policy enforced %s after it was applied: %s", time.Since(start).Round(time.Millisecond), statusMessage(body))
			return
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the admission policy is not enforced 30s after it was applied: a cordon by the agent answers %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestNodeMarksGrantOnlyWhatTheAgentUses holds node-marks.yaml to the
// DaemonSet it serves: the account bound is the DaemonSet's, the policy
// guards that account, the role has no verb the marker does not use, and
// the pod mounts a token and names its node.
func TestNodeMarksGrantOnlyWhatTheAgentUses(t *testing.T) {
	spec, c, docs := container(t)
	account, _ := get(spec, "serviceAccountName").(string)
	if len(docs["ClusterRole"]) != 1 || len(docs["ClusterRoleBinding"]) != 1 || len(docs["ValidatingAdmissionPolicy"]) != 1 || len(docs["ValidatingAdmissionPolicyBinding"]) != 1 {
		t.Fatalf("want one ClusterRole, ClusterRoleBinding, ValidatingAdmissionPolicy and binding")
	}
	rules, _ := get(docs["ClusterRole"][0], "rules").([]any)
	if len(rules) != 1 || mustJSON(t, rules[0]) != `{"apiGroups":[""],"resources":["nodes"],"verbs":["get","patch"]}` {
		t.Errorf("ClusterRole rules %s; want get and patch on nodes only", mustJSON(t, rules))
	}
	subjects, _ := get(docs["ClusterRoleBinding"][0], "subjects").([]any)
	if len(subjects) != 1 || get(subjects[0], "name") != account || get(subjects[0], "namespace") != "gpuhost" {
		t.Errorf("ClusterRoleBinding subjects %s; want the DaemonSet's account %s", mustJSON(t, subjects), account)
	}
	conds, _ := get(docs["ValidatingAdmissionPolicy"][0], "spec", "matchConditions").([]any)
	if len(conds) != 1 || !strings.Contains(get(conds[0], "expression").(string), "system:serviceaccount:gpuhost:"+account) {
		t.Errorf("the admission policy guards %s, not the DaemonSet's account", mustJSON(t, conds))
	}
	vb := docs["ValidatingAdmissionPolicyBinding"][0]
	if get(vb, "spec", "policyName") != get(docs["ValidatingAdmissionPolicy"][0], "metadata", "name") || mustJSON(t, get(vb, "spec", "validationActions")) != `["Deny"]` {
		t.Errorf("the policy binding does not deny with the policy: %s", mustJSON(t, get(vb, "spec")))
	}
	if get(spec, "automountServiceAccountToken") != true {
		t.Error("the agent's pod mounts no service account token to mark its node with")
	}
	if !strings.Contains(mustJSON(t, get(c, "env")), `{"name":"NODE_NAME","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}}`) {
		t.Errorf("NODE_NAME is not the pod's spec.nodeName: %s", mustJSON(t, get(c, "env")))
	}
	if args, _ := get(c, "args").([]any); !slices.Contains(args, any("--node-label")) {
		t.Errorf("the DaemonSet does not mark nodes: %v", args)
	}
}

// setUpCluster applies the DaemonSet as rendered and node-marks.yaml, and
// makes what the cluster would have: the nvidia RuntimeClass and two GPU
// nodes, each already labelled and tainted by others.
func setUpCluster(t *testing.T, api *kubeapi.Server) {
	t.Helper()
	var ds bytes.Buffer
	if err := RenderDaemonSet(&ds, testImage); err != nil {
		t.Fatal(err)
	}
	api.Apply(t, ds.Bytes())
	marks, err := os.ReadFile("kubernetes/node-marks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api.Apply(t, marks)
	api.Admin(t, http.MethodPost, "/apis/node.k8s.io/v1/runtimeclasses",
		map[string]any{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": map[string]any{"name": "nvidia"}, "handler": "nvidia"})
	for _, name := range []string{"node-a", "node-b"} {
		api.Admin(t, http.MethodPost, "/api/v1/nodes", map[string]any{
			"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"nvidia.com/gpu.present": "true"}},
			"spec":     map[string]any{"taints": []any{map[string]any{"key": "nvidia.com/gpu", "effect": "NoSchedule"}}},
		})
	}
}

// runner is the agent with a node marker, as gpuhost agent --node-label
// --node-taint wires it, scanning whatever the test hands it.
type runner struct {
	agent *agent.Agent
	rep   *reports.Report
	err   error
}

func newRunner(t *testing.T, marker nodemark.Marker) *runner {
	t.Helper()
	r := &runner{}
	a, err := agent.New(agent.Config{
		Scan:     func(context.Context) (*reports.Report, error) { return r.rep, r.err },
		DBPath:   filepath.Join(t.TempDir(), "history.db"),
		Interval: time.Hour,
		Node:     marker,
		Log:      slog.New(slog.NewTextHandler(testLog{t}, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	r.agent = a
	return r
}

// run runs the agent once on rep, or on a scan failing with err.
func (r *runner) run(t *testing.T, rep *reports.Report, err error) {
	t.Helper()
	r.rep, r.err = rep, err
	start := time.Now()
	rec := r.agent.RunOnce(context.Background())
	t.Logf("run: exit %d, with its marks in %s", rec.ExitCode, time.Since(start).Round(time.Millisecond))
}

// metrics is the agent's /metrics text.
func (r *runner) metrics(t *testing.T) string {
	t.Helper()
	rec := httptest.NewRecorder()
	r.agent.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	return rec.Body.String()
}

// testLog puts the agent's log in the test's.
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func nodeReport(results ...reports.Result) *reports.Report {
	rep := &reports.Report{Schema: reports.Schema, Target: reports.Target{Kind: "host", Ref: "node-a"}, Results: results}
	rep.Summarize()
	return rep
}

// failingReport fails a critical and a high check, which mark the node,
// and a medium one, which does not.
func failingReport() *reports.Report {
	return nodeReport(
		reports.Result{ID: "GH-TLS-002", Severity: "high", Status: reports.StatusFail},
		reports.Result{ID: "GH-SSH-001", Severity: "critical", Status: reports.StatusFail},
		reports.Result{ID: "GH-NET-001", Severity: "medium", Status: reports.StatusFail},
	)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// statusMessage is the message of a Status the API server answered with.
func statusMessage(body []byte) string {
	var st struct{ Message string }
	if json.Unmarshal(body, &st) != nil || st.Message == "" {
		return string(body)
	}
	return st.Message
}
