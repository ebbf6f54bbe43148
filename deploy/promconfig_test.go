package deploy

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil/kubeapi"
)

// serviceMonitor is what the scrape configuration is made of.
type serviceMonitor struct {
	Metadata struct{ Name, Namespace string }
	Spec     struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Scheme        string `json:"scheme"`
			Interval      string `json:"interval"`
			HonorLabels   bool   `json:"honorLabels"`
			Authorization struct {
				Type        string `json:"type"`
				Credentials secretKey
			} `json:"authorization"`
			TLSConfig struct {
				CA struct {
					Secret secretKey `json:"secret"`
				} `json:"ca"`
				ServerName string `json:"serverName"`
			} `json:"tlsConfig"`
			Relabelings []struct {
				SourceLabels []string `json:"sourceLabels"`
				TargetLabel  string   `json:"targetLabel"`
			} `json:"relabelings"`
		} `json:"endpoints"`
	}
}

type secretKey struct{ Name, Key string }

// writePrometheusConfig writes into dir prometheus.yml and the rule file,
// from the ServiceMonitor and PrometheusRule the API server holds, as
// prometheus-operator renders them but for one thing: kubernetes_sd's pod
// role rather than endpoints or endpointslice, whose objects' validation
// refuses the loopback address the agent listens on here. So the job keeps
// the ready pods of the Service the selector names, on the port the
// endpoint names, sets the target labels the operator sets, and takes the
// TLS CA and bearer token from the secrets the endpoint names, written to
// files; the rule groups become a rule file. Prometheus watches the API
// server with a service account of its own, with the operator's read of
// services, endpoints and pods. Two changes for a test's pace: every
// endpoint is scraped each second rather than at its interval, and
// GpuhostDriftDetected fires after 1s rather than its own for:.
func writePrometheusConfig(t *testing.T, api *kubeapi.Server, dir string) {
	t.Helper()
	sdToken := prometheusAccount(t, api)
	apiCA := writeFileIn(t, dir, "kube-ca.crt", api.CA)
	sdTokenFile := writeFileIn(t, dir, "kube-token", []byte(sdToken))

	var sm serviceMonitor
	getJSON(t, api, kubeapi.ResourcePath("monitoring.coreos.com/v1", "ServiceMonitor", "gpuhost")+"/gpuhost-agent", &sm)
	service, podSelector := selectedService(t, api, sm.Metadata.Namespace, sm.Spec.Selector.MatchLabels)
	var jobs []any
	for i, ep := range sm.Spec.Endpoints {
		if ep.Authorization.Type != "Bearer" || ep.TLSConfig.CA.Secret.Name == "" {
			t.Fatalf("endpoint %d: want a bearer token and a CA from secrets: %+v", i, ep)
		}
		prefix := fmt.Sprintf("sm%d-", i)
		caFile := writeFileIn(t, dir, prefix+"ca.crt", decodeSecret(t, api, ep.TLSConfig.CA.Secret.Name, ep.TLSConfig.CA.Secret.Key))
		tokenFile := writeFileIn(t, dir, prefix+"token", decodeSecret(t, api, ep.Authorization.Credentials.Name, ep.Authorization.Credentials.Key))
		relabel := operatorRelabelings(service, podSelector, ep.Port)
		for _, r := range ep.Relabelings {
			relabel = append(relabel, map[string]any{"source_labels": r.SourceLabels, "target_label": r.TargetLabel})
		}
		t.Logf("endpoint %d: scraped each 1s in the test, %s in the ServiceMonitor", i, ep.Interval)
		jobs = append(jobs, map[string]any{
			"job_name":        fmt.Sprintf("serviceMonitor/%s/%s/%d", sm.Metadata.Namespace, sm.Metadata.Name, i),
			"honor_labels":    ep.HonorLabels,
			"scrape_interval": "1s",
			"metrics_path":    ep.Path,
			"scheme":          ep.Scheme,
			"authorization":   map[string]any{"type": "Bearer", "credentials_file": tokenFile},
			"tls_config":      map[string]any{"ca_file": caFile, "server_name": ep.TLSConfig.ServerName},
			"kubernetes_sd_configs": []any{map[string]any{
				"role":          "pod",
				"api_server":    "https://" + net.JoinHostPort(api.Host, strconv.Itoa(api.Port)),
				"authorization": map[string]any{"credentials_file": sdTokenFile},
				"tls_config":    map[string]any{"ca_file": apiCA},
				"namespaces":    map[string]any{"names": []string{sm.Metadata.Namespace}},
			}},
			"relabel_configs": relabel,
		})
	}
	rules := writeRuleFile(t, api, dir)
	// JSON is YAML: Prometheus reads it as its configuration.
	cfg := map[string]any{
		"global":         map[string]any{"scrape_interval": "1s", "evaluation_interval": "1s"},
		"rule_files":     []string{rules},
		"scrape_configs": jobs,
	}
	writeFileIn(t, dir, "prometheus.yml", []byte(mustJSON(t, cfg)))
}

// operatorRelabelings are the relabelings prometheus-operator puts before
// a ServiceMonitor endpoint's own, for the pod role: keep the ready pods
// the selected Service selects, on the container port the endpoint names,
// and label each target with its namespace, service, pod, container and
// endpoint, and job with the Service's name.
func operatorRelabelings(service string, podSelector map[string]string, port string) []map[string]any {
	var r []map[string]any
	for k, v := range podSelector {
		name := strings.NewReplacer(".", "_", "/", "_", "-", "_").Replace(k)
		r = append(r, map[string]any{"action": "keep",
			"source_labels": []string{"__meta_kubernetes_pod_label_" + name, "__meta_kubernetes_pod_labelpresent_" + name},
			"regex":         "(" + v + ");true"})
	}
	r = append(r,
		map[string]any{"action": "keep", "source_labels": []string{"__meta_kubernetes_pod_container_port_name"}, "regex": port},
		map[string]any{"action": "keep", "source_labels": []string{"__meta_kubernetes_pod_ready"}, "regex": "true"},
		map[string]any{"action": "drop", "source_labels": []string{"__meta_kubernetes_pod_phase"}, "regex": "(Failed|Succeeded)"},
		map[string]any{"source_labels": []string{"__meta_kubernetes_namespace"}, "target_label": "namespace"},
		map[string]any{"target_label": "service", "replacement": service},
		map[string]any{"source_labels": []string{"__meta_kubernetes_pod_name"}, "target_label": "pod"},
		map[string]any{"source_labels": []string{"__meta_kubernetes_pod_container_name"}, "target_label": "container"},
		map[string]any{"target_label": "job", "replacement": service},
		map[string]any{"target_label": "endpoint", "replacement": port},
	)
	return r
}

// selectedService is the one Service in namespace that selector selects,
// and the pods it selects in turn.
func selectedService(t *testing.T, api *kubeapi.Server, namespace string, selector map[string]string) (string, map[string]string) {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Selector map[string]string `json:"selector"`
			} `json:"spec"`
		} `json:"items"`
	}
	var sel []string
	for k, v := range selector {
		sel = append(sel, k+"="+v)
	}
	getJSON(t, api, kubeapi.ResourcePath("v1", "Service", namespace)+"?labelSelector="+url.QueryEscape(strings.Join(sel, ",")), &list)
	if len(list.Items) != 1 {
		t.Fatalf("the ServiceMonitor's selector %v selects %d services, want 1", selector, len(list.Items))
	}
	return list.Items[0].Metadata.Name, list.Items[0].Spec.Selector
}

// writeRuleFile writes the PrometheusRule's groups as a rule file, with
// GpuhostDriftDetected's for: cut to 1s (its own is minutes).
func writeRuleFile(t *testing.T, api *kubeapi.Server, dir string) string {
	t.Helper()
	var pr struct {
		Spec struct {
			Groups []struct {
				Name  string           `json:"name"`
				Rules []map[string]any `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	getJSON(t, api, kubeapi.ResourcePath("monitoring.coreos.com/v1", "PrometheusRule", "gpuhost")+"/gpuhost-agent", &pr)
	found := false
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r["alert"] == "GpuhostDriftDetected" {
				t.Logf("GpuhostDriftDetected: for %v in the PrometheusRule, 1s in the test", r["for"])
				r["for"] = "1s"
				found = true
			}
		}
	}
	if !found {
		t.Fatal("the PrometheusRule has no GpuhostDriftDetected")
	}
	return writeFileIn(t, dir, "gpuhost.rules.json", []byte(mustJSON(t, map[string]any{"groups": pr.Spec.Groups})))
}

// prometheusAccount makes Prometheus's service account with what
// prometheus-operator's ClusterRole grants it for discovery, and returns a
// token of it.
func prometheusAccount(t *testing.T, api *kubeapi.Server) string {
	t.Helper()
	api.Admin(t, http.MethodPost, "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "monitoring"}})
	api.Admin(t, http.MethodPost, kubeapi.ResourcePath("v1", "ServiceAccount", "monitoring"),
		map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "prometheus"}})
	api.Apply(t, []byte(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: prometheus}
rules:
  - apiGroups: [""]
    resources: [services, endpoints, pods]
    verbs: [get, list, watch]
  - apiGroups: [discovery.k8s.io]
    resources: [endpointslices]
    verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: prometheus}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: prometheus}
subjects: [{kind: ServiceAccount, name: prometheus, namespace: monitoring}]
`))
	return api.Token(t, "monitoring", "prometheus", nil)
}
