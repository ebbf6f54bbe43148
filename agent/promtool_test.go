package agent

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// TestPromtoolAcceptsMetrics feeds the agent's real /metrics exposition,
// after runs that fill every metric, to `promtool check metrics`, the lint
// Prometheus users run on an exporter.
func TestPromtoolAcceptsMetrics(t *testing.T) {
	promtool := testutil.Tool(t, "promtool", "prometheus")
	a := newAgent(t, Config{})
	a.RunOnce(context.Background())
	a.RunOnce(context.Background())
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body.String())
	}
	body := rec.Body.String()
	for _, name := range MetricNames {
		if !strings.Contains(body, "\n# TYPE "+name+" ") && !strings.HasPrefix(body, "# HELP "+name+" ") {
			t.Errorf("the exposition lacks %s", name)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil || strings.TrimSpace(out.String()) != "" {
		t.Errorf("promtool check metrics: %v\n%s\nexposition:\n%s", err, out.String(), body)
	}
}
