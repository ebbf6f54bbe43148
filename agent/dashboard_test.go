package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuhost/gpuhost/agent/podresources"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/kubelet"
)

// dashboard is testdata/dcgm-exporter/dashboard-queries.json: the template
// variables and panel queries of NVIDIA's dcgm-exporter Grafana dashboard.
type dashboard struct {
	Variables []struct{ Name, Query string }
	Panels    []struct{ Title, Expr string }
}

// promResult is the part of Prometheus's HTTP API answers the test reads.
type promResult struct {
	Status string
	Error  string
	Data   json.RawMessage
}

// prometheusServer is Debian's prometheus, started by the test with its own
// configuration and storage, answering its HTTP API on base.
type prometheusServer struct {
	proc *testutil.Proc
	base string
}

// startPrometheus scrapes target every second as the ServiceMonitor has the
// Prometheus Operator do it: honoring the agent's labels, over target labels
// naming the agent's own pod.
func startPrometheus(t *testing.T, target string) *prometheusServer {
	t.Helper()
	bin := testutil.Tool(t, "prometheus", "prometheus")
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gpuhost-agent
    honor_labels: true
    static_configs:
      - targets: [%q]
        labels: {namespace: gpuhost, pod: gpuhost-agent-x7k2p, container: agent}
`, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
	p := testutil.Start(t, exec.Command(bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--web.console.templates="+filepath.Join(dir, "consoles"),
		"--web.console.libraries="+filepath.Join(dir, "console_libraries")))
	s := &prometheusServer{proc: p, base: "http://" + addr}
	p.WaitFor(t, time.Minute, "/-/ready", func() bool {
		resp, err := http.Get(s.base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return s
}

// get calls the HTTP API and decodes the data of a successful answer.
func (s *prometheusServer) get(t *testing.T, path string, params url.Values, data any) error {
	t.Helper()
	resp, err := http.Get(s.base + path + "?" + params.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r promResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("%s: %d: %w", path, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s %v: %s", path, params, r.Error)
	}
	return json.Unmarshal(r.Data, data)
}

// sample is one series of an instant query's vector.
type sample struct {
	Metric map[string]string
	Value  [2]any
}

func (s *prometheusServer) query(t *testing.T, expr string) []sample {
	t.Helper()
	var data struct{ Result []sample }
	if err := s.get(t, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	return data.Result
}

// waitFor waits for expr to return data, noticing a Prometheus that exits.
func (s *prometheusServer) waitFor(t *testing.T, expr string) {
	t.Helper()
	s.proc.WaitFor(t, time.Minute, expr, func() bool {
		var data struct{ Result []sample }
		return s.get(t, "/api/v1/query", url.Values{"query": {expr}}, &data) == nil && len(data.Result) > 0
	})
}

var dashboardVar = regexp.MustCompile(`^label_values\((\w+), (\w+)\)$`)

// NVIDIA's dcgm-exporter dashboard, against the agent as Debian's real
// Prometheus scrapes it: each template variable lists values, and every
// panel that does not need DCGM's profiling module returns data with the
// variables set as Grafana sets them ("All": every value, as a regex).
// Through honor_labels, a GPU's series name the pod holding it, and a GPU
// no pod holds is not attributed to the agent's own pod.
func TestDCGMExporterDashboardOnPrometheus(t *testing.T) {
	var d dashboard
	b, err := os.ReadFile(filepath.Join("testdata", "dcgm-exporter", "dashboard-queries.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil || len(d.Panels) == 0 {
		t.Fatalf("dashboard fixture: %v", err)
	}
	g := newFleetGPUs()
	k := kubelet.ServePodResources(t, kubelet.Pod("ml", "trainer-0", map[string][]*podresourcesv1.ContainerDevices{
		"train": {kubelet.Devices("nvidia.com/gpu", uuidOf(t, g, 0))},
	}))
	s := NewGPUSampler(g, hostProc(t), quietLog(), WithPodResources(podresources.New(k.Socket)))
	a := newAgent(t, Config{GPU: s, GPUInterval: 250 * time.Millisecond, Listen: "127.0.0.1:0"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the agent listening", func() bool { return a.Addr() != "" })

	prom := startPrometheus(t, a.Addr())
	prom.waitFor(t, `up{job="gpuhost-agent"} == 1`)
	prom.waitFor(t, `DCGM_FI_DEV_GPU_TEMP`)

	vars := map[string]string{}
	for _, v := range d.Variables {
		m := dashboardVar.FindStringSubmatch(v.Query)
		if m == nil {
			t.Fatalf("variable %s: query %q", v.Name, v.Query)
		}
		var values []string
		if err := prom.get(t, "/api/v1/label/"+m[2]+"/values", url.Values{"match[]": {m[1]}}, &values); err != nil || len(values) == 0 {
			t.Fatalf("variable %s (%s): %v %v", v.Name, v.Query, values, err)
		}
		if v.Name == "instance" && !slices.Equal(values, []string{a.Addr()}) || v.Name == "gpu" && len(values) != 8 {
			t.Errorf("variable %s: %v", v.Name, values)
		}
		// Grafana's "All" on a multi-value variable: each value escaped as a
		// regex inside a PromQL string, joined in one group.
		for i, val := range values {
			values[i] = strings.ReplaceAll(regexp.QuoteMeta(val), `\`, `\\`)
		}
		vars["$"+v.Name] = "(" + strings.Join(values, "|") + ")"
	}
	answered := 0
	for _, p := range d.Panels {
		expr := p.Expr
		for name, v := range vars {
			expr = strings.ReplaceAll(expr, name, v)
		}
		if needsProfiling(expr) {
			continue
		}
		if res := prom.query(t, expr); len(res) == 0 {
			t.Errorf("panel %q: no data for %s", p.Title, expr)
		} else {
			answered++
		}
	}
	if answered != 7 {
		t.Errorf("%d panels answered, want the 7 of 8 that need no profiling", answered)
	}
	checkScrapedSeries(t, prom)
}

// needsProfiling reports whether a query reads a metric only DCGM's
// profiling module measures, and that the agent says so.
func needsProfiling(expr string) bool {
	return slices.ContainsFunc(DCGMNeedsProfiling, func(m string) bool { return strings.Contains(expr, m) })
}

// checkScrapedSeries looks at what Prometheus kept: values, workload labels
// and the declared types.
func checkScrapedSeries(t *testing.T, prom *prometheusServer) {
	t.Helper()
	// Eight A100s at 100 W each in the mock.
	if res := prom.query(t, `sum(DCGM_FI_DEV_POWER_USAGE)`); len(res) != 1 || res[0].Value[1] != "800" {
		t.Errorf("GPU Power Total: %v", res)
	}
	held := prom.query(t, `DCGM_FI_DEV_GPU_UTIL{gpu="0"}`)
	free := prom.query(t, `DCGM_FI_DEV_GPU_UTIL{gpu="1"}`)
	own := prom.query(t, `gpuhost_gpus`)
	switch {
	case len(held) != 1 || held[0].Metric["namespace"] != "ml" || held[0].Metric["pod"] != "trainer-0" || held[0].Metric["container"] != "train":
		t.Errorf("GPU 0, held by ml/trainer-0/train: %v", held)
	case len(free) != 1 || free[0].Metric["pod"] != "" || free[0].Metric["namespace"] != "":
		t.Errorf("GPU 1, held by no pod, is attributed: %v", free)
	case len(own) != 1 || own[0].Metric["pod"] != "gpuhost-agent-x7k2p":
		t.Errorf("the agent's own series lost its target labels: %v", own)
	}
	var meta map[string][]struct{ Type string }
	if err := prom.get(t, "/api/v1/metadata", url.Values{}, &meta); err != nil {
		t.Fatal(err)
	}
	for _, f := range gpuFamilies {
		want := map[bool]string{true: "counter", false: "gauge"}[f.kind == prometheus.CounterValue]
		if got := meta[f.name]; len(got) == 0 && f.name != "DCGM_FI_DEV_XID_ERRORS" || len(got) > 0 && got[0].Type != want {
			t.Errorf("Prometheus has %s as %v, want %s", f.name, got, want)
		}
	}
}
