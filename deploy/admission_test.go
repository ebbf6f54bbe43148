package deploy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil/kubeapi"
)

// crdDir holds prometheus-operator's published CRDs for ServiceMonitor and
// PrometheusRule, vendored from its Go module (the header of each file
// names the release).
const crdDir = "testdata/prometheus-operator-crd"

// TestManifestsAdmittedByARealAPIServer applies everything a cluster
// admin applies, in order, to a real kube-apiserver: prometheus-operator's
// CRDs, then the namespace with its Pod Security labels, the service
// account, DaemonSet and Service (rendered with an image by digest), the
// node-marking RBAC and admission policy, the ServiceMonitor and the
// PrometheusRule. Server-side apply with strict field validation: a field
// the API or a CRD schema does not know fails, as a wrong type or pattern
// does.
func TestManifestsAdmittedByARealAPIServer(t *testing.T) {
	t.Parallel()
	api := kubeapi.Start(t)
	t.Logf("kube-apiserver ready in %s", api.Ready.Round(time.Millisecond))
	applyCRDs(t, api)
	applyManifests(t, api)

	// What was stored is what was written: a field the CRD schema lacked
	// would have been refused by strict validation, not pruned silently.
	var sm struct {
		Spec struct {
			Endpoints []struct {
				Scheme    string `json:"scheme"`
				TLSConfig struct {
					ServerName string `json:"serverName"`
				} `json:"tlsConfig"`
				Authorization struct {
					Credentials struct{ Name, Key string } `json:"credentials"`
				} `json:"authorization"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	getJSON(t, api, kubeapi.ResourcePath("monitoring.coreos.com/v1", "ServiceMonitor", "gpuhost")+"/gpuhost-agent", &sm)
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].TLSConfig.ServerName != "gpuhost-agent.gpuhost.svc" ||
		sm.Spec.Endpoints[0].Authorization.Credentials.Name != "gpuhost-agent-token" {
		t.Errorf("the ServiceMonitor as stored: %+v", sm.Spec)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []map[string]any `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	getJSON(t, api, kubeapi.ResourcePath("monitoring.coreos.com/v1", "PrometheusRule", "gpuhost")+"/gpuhost-agent", &rule)
	n := 0
	for _, g := range rule.Spec.Groups {
		n += len(g.Rules)
	}
	if n < 10 {
		t.Errorf("the PrometheusRule as stored has %d rules", n)
	}

	brokenRulesRefused(t, api)
	podSecurityAdmitsTheAgentOnlyWherePrivileged(t, api)
}

// applyCRDs applies the CRDs and waits until their kinds are served: the
// API server establishes a CRD, then its discovery and handlers follow.
func applyCRDs(t *testing.T, api *kubeapi.Server) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil || len(files) != 2 {
		t.Fatalf("want the ServiceMonitor and PrometheusRule CRDs in %s, have %v (%v)", crdDir, files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		api.Apply(t, b)
	}
	start := time.Now()
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		path := kubeapi.ResourcePath("monitoring.coreos.com/v1", kind, "default")
		for {
			code, _, err := api.Send("", http.MethodGet, path, "", nil)
			if err == nil && code == http.StatusOK {
				break
			}
			if time.Since(start) > time.Minute {
				t.Fatalf("%s is not served a minute after its CRD was applied: %d %v", kind, code, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Logf("CRDs served %s after they were applied", time.Since(start).Round(time.Millisecond))
}

// applyManifests applies deploy/kubernetes in the order an admin would:
// the rendered DaemonSet file (namespace first), node-marks.yaml, the
// ServiceMonitor and the PrometheusRule.
func applyManifests(t *testing.T, api *kubeapi.Server) {
	t.Helper()
	var ds bytes.Buffer
	if err := RenderDaemonSet(&ds, testImage); err != nil {
		t.Fatal(err)
	}
	api.Apply(t, ds.Bytes())
	for _, f := range []string{"node-marks.yaml", "servicemonitor.yaml", "prometheusrule.yaml"} {
		b, err := os.ReadFile(filepath.Join("kubernetes", f))
		if err != nil {
			t.Fatal(err)
		}
		api.Apply(t, b)
	}
}

func getJSON(t *testing.T, api *kubeapi.Server, path string, v any) {
	t.Helper()
	if err := json.Unmarshal(api.Admin(t, http.MethodGet, path, nil), v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// brokenRulesRefused: the CRD's schema, which the API server enforces on
// a create as kubectl create sends it, refuses a rule without an expression, a duration Prometheus would not
// parse and a field the schema does not have.
func brokenRulesRefused(t *testing.T, api *kubeapi.Server) {
	t.Helper()
	for _, c := range []struct{ what, rule, want string }{
		{"no expr", `{alert: Broken, for: 5m}`, `spec.groups[0].rules[0].expr: Required value`},
		{"a duration in words", `{alert: Broken, expr: up == 0, for: five minutes}`, `spec.groups[0].rules[0].for: Invalid value`},
		{"an unknown field", `{alert: Broken, expr: up == 0, severity: critical}`, `strict decoding error: unknown field "spec.groups[0].rules[0].severity"`},
	} {
		doc := "apiVersion: monitoring.coreos.com/v1\nkind: PrometheusRule\nmetadata: {name: broken, namespace: gpuhost}\n" +
			"spec:\n  groups:\n    - name: broken\n      rules:\n        - " + c.rule + "\n"
		path := kubeapi.ResourcePath("monitoring.coreos.com/v1", "PrometheusRule", "gpuhost") + "?fieldValidation=Strict"
		code, body, err := api.Send("", http.MethodPost, path, "application/yaml", []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if code/100 == 2 || !strings.Contains(statusMessage(body), c.want) {
			t.Errorf("a PrometheusRule with %s: %d %s; want it refused saying %q", c.what, code, body, c.want)
		} else {
			t.Logf("a PrometheusRule with %s: %d %s", c.what, code, statusMessage(body))
		}
	}
	if code, _, _ := api.Send("", http.MethodGet, kubeapi.ResourcePath("monitoring.coreos.com/v1", "PrometheusRule", "gpuhost")+"/broken", "", nil); code != http.StatusNotFound {
		t.Errorf("a broken PrometheusRule was stored: GET answers %d", code)
	}
}

// podSecurityAdmitsTheAgentOnlyWherePrivileged: the agent's pod (host
// namespaces, hostPath, added capabilities) is admitted in the gpuhost
// namespace, whose label enforces the privileged Pod Security level, and
// refused in one that enforces baseline. The API server keeps
// recursiveReadOnly as written, and refuses it with a propagating mount.
func podSecurityAdmitsTheAgentOnlyWherePrivileged(t *testing.T, api *kubeapi.Server) {
	t.Helper()
	api.Admin(t, http.MethodPost, "/apis/node.k8s.io/v1/runtimeclasses",
		map[string]any{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": map[string]any{"name": "nvidia"}, "handler": "nvidia"})
	pod := api.DaemonSetPod(t, "gpuhost", "gpuhost-agent", "node-a")
	mounts := mustJSON(t, get(pod.Spec, "containers").([]any)[0].(map[string]any)["volumeMounts"])
	if !strings.Contains(mounts, `"mountPath":"/host","mountPropagation":"None","name":"host","readOnly":true,"recursiveReadOnly":"Enabled"`) {
		t.Errorf("the pod as stored lost the host mount's recursiveReadOnly: %s", mounts)
	}

	api.Admin(t, http.MethodPost, "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "baseline", "labels": map[string]any{"pod-security.kubernetes.io/enforce": "baseline"}}})
	api.Admin(t, http.MethodPost, kubeapi.ResourcePath("v1", "ServiceAccount", "baseline"),
		map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "gpuhost-agent"}})
	spec := pod.Spec
	for _, c := range []struct {
		what, namespace, want string
		change                func(map[string]any)
	}{
		{"in a baseline namespace", "baseline", `violates PodSecurity "baseline:latest"`, func(map[string]any) {}},
		{"with recursiveReadOnly on a propagating mount", "gpuhost", `recursiveReadOnly: Forbidden: may only be specified when mountPropagation is None`, func(s map[string]any) {
			m := get(s, "containers").([]any)[0].(map[string]any)["volumeMounts"].([]any)[0].(map[string]any)
			m["mountPropagation"] = "HostToContainer"
		}},
	} {
		var s map[string]any
		if err := json.Unmarshal([]byte(mustJSON(t, spec)), &s); err != nil {
			t.Fatal(err)
		}
		delete(s, "nodeName")
		c.change(s)
		body := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "agent"}, "spec": s})
		code, answer, err := api.Send("", http.MethodPost, kubeapi.ResourcePath("v1", "Pod", c.namespace)+"?dryRun=All", "application/json", []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if code/100 == 2 || !strings.Contains(statusMessage(answer), c.want) {
			t.Errorf("the agent's pod %s: %d %s; want it refused saying %q", c.what, code, answer, c.want)
		} else {
			t.Logf("the agent's pod %s: %d %s", c.what, code, statusMessage(answer))
		}
	}
}
