package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// TestPromtoolChecksRules hands the PrometheusRule's groups to `promtool
// check rules`, as a Prometheus operator (or a plain rule_files entry)
// would load them.
func TestPromtoolChecksRules(t *testing.T) {
	promtool := testutil.Tool(t, "promtool", "prometheus")
	docs := loadYAML(t)
	if len(docs["PrometheusRule"]) != 1 {
		t.Fatalf("want one PrometheusRule, have %d", len(docs["PrometheusRule"]))
	}
	groups := get(docs["PrometheusRule"][0], "spec", "groups")
	if g, _ := groups.([]any); len(g) == 0 {
		t.Fatal("the PrometheusRule has no groups")
	}
	b, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "gpuhost.rules.yaml")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := testutil.Run(t, time.Minute, promtool, "check", "rules", file)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check rules:\n%s", out)
	}

	// The alerts fire on series named as the agent names them: a renamed
	// metric would leave a rule that checks clean and never fires.
	tests := `rule_files: [gpuhost.rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'gpuhost_drift_checks_failing{node="n1"}'
        values: '0 1x30'
      - series: 'gpuhost_check_status{node="n1", id="GH-SSH-001", severity="critical", status="fail"}'
        values: '1x30'
      - series: 'gpuhost_last_run_timestamp_seconds{node="n1"}'
        values: '0x300'
    alert_rule_test:
      - eval_time: 20m
        alertname: GpuhostDriftDetected
        exp_alerts:
          - exp_labels: {node: n1, severity: warning}
            exp_annotations:
              summary: "n1 drifted from its baked manifest (1 drift checks failing)"
              description: "Compare with ` + "`gpuhost history diff`" + ` to see when it started; rebuild or re-baseline the node."
      - eval_time: 10m
        alertname: GpuhostCriticalCheckFailed
        exp_alerts:
          - exp_labels: {node: n1, id: GH-SSH-001, severity: critical}
            exp_annotations:
              summary: "n1 fails critical check GH-SSH-001"
              description: "Run ` + "`gpuhost history`" + ` on the node, or fetch /api/v1/runs/latest, for the message and remediation."
      - eval_time: 4h
        alertname: GpuhostLastRunStale
        exp_alerts:
          - exp_labels: {node: n1, severity: warning}
            exp_annotations:
              summary: "No gpuhost scan has completed on n1 for over 3 hours"
`
	testFile := filepath.Join(filepath.Dir(file), "gpuhost.rules.test.yaml")
	if err := os.WriteFile(testFile, []byte(tests), 0o644); err != nil {
		t.Fatal(err)
	}
	out = testutil.Run(t, time.Minute, promtool, "test", "rules", testFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules:\n%s", out)
	}

	// Certificates live for months: evaluated hourly, not each minute.
	certRules := `rule_files: [gpuhost.rules.yaml]
evaluation_interval: 1h
tests:
` + certTests
	certFile := filepath.Join(filepath.Dir(file), "gpuhost.rules.certs.test.yaml")
	if err := os.WriteFile(certFile, []byte(certRules), 0o644); err != nil {
		t.Fatal(err)
	}
	out = testutil.Run(t, time.Minute, promtool, "test", "rules", certFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules (certificates):\n%s", out)
	}
}

// certTests are promtool rule tests of the agent's credential alerts.
const certTests = `  # The agent's certificate: valid from 0 for 100 days, so it is older
  # than 90 days from day 90 on and expires within 14 days from day 86 on.
  - interval: 1h
    input_series:
      - series: 'gpuhost_agent_tls_certificate_not_before_timestamp_seconds{node="n1"}'
        values: '0x2500'
      - series: 'gpuhost_agent_tls_certificate_not_after_timestamp_seconds{node="n1"}'
        values: '8640000x2500'
      - series: 'gpuhost_agent_credential_reload_errors_total{node="n1", kind="tls"}'
        values: '0x10 1x10'
    alert_rule_test:
      - eval_time: 85d
        alertname: GpuhostAgentCertificateExpiring
      - eval_time: 87d
        alertname: GpuhostAgentCertificateExpiring
        exp_alerts:
          - exp_labels: {node: n1, severity: warning}
            exp_annotations:
              summary: "The gpuhost agent on n1 serves a certificate that expires within 14 days"
              description: "Rotate the files --tls-cert and --tls-key name; the agent serves the new pair at the next handshake."
      - eval_time: 89d
        alertname: GpuhostAgentCertificateOld
      - eval_time: 91d
        alertname: GpuhostAgentCertificateOld
        exp_alerts:
          - exp_labels: {node: n1, severity: warning}
            exp_annotations:
              summary: "The gpuhost agent on n1 serves a certificate older than 90 days"
              description: "Keys are rotated every 90 days (GH-KEY); issue a new certificate for the agent."
      - eval_time: 5h
        alertname: GpuhostAgentCredentialReloadFailed
      - eval_time: 12h
        alertname: GpuhostAgentCredentialReloadFailed
        exp_alerts:
          - exp_labels: {node: n1, kind: tls, severity: warning}
            exp_annotations:
              summary: "The gpuhost agent on n1 could not load its rotated tls files and serves the previous ones"
`
