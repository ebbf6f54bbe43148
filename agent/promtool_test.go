package agent

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// TestPromtoolAcceptsMetrics feeds the agent's real /metrics exposition,
// after runs that fill every metric, to `promtool check metrics`, the lint
// Prometheus users run on an exporter.
func TestPromtoolAcceptsMetrics(t *testing.T) {
	promtool := testutil.Tool(t, "promtool", "prometheus")
	// With a certificate and a token, so that the credential metrics are
	// exported and linted too.
	dir := t.TempDir()
	cert, key, _ := testutil.WriteCert(t, dir, testutil.CertSpec{})
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, Config{TLSCert: cert, TLSKey: key, TokenFile: tok})
	a.RunOnce(context.Background())
	a.RunOnce(context.Background())
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Authorization", "Bearer t0ken")
	a.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body.String())
	}
	body := rec.Body.String()
	for _, name := range append(slices.Clone(MetricNames), CredentialMetricNames...) {
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
