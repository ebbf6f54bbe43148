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
	t.Parallel()
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
	opsFile := filepath.Join(filepath.Dir(file), "gpuhost.rules.ops.test.yaml")
	if err := os.WriteFile(opsFile, []byte(opsTests), 0o644); err != nil {
		t.Fatal(err)
	}
	out = testutil.Run(t, time.Minute, promtool, "test", "rules", opsFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules (the agent's runs):\n%s", out)
	}
	// Every alert has a test in which it fires.
	all := tests + certTests + opsTests + gpuTests
	for _, g := range groups.([]any) {
		for _, r := range get(g, "rules").([]any) {
			name, _ := get(r, "alert").(string)
			if !strings.Contains(all, "alertname: "+name+"\n        exp_alerts:") {
				t.Errorf("alert %s has no promtool test in which it fires", name)
			}
		}
	}
	gpuFile := filepath.Join(filepath.Dir(file), "gpuhost.rules.gpu.test.yaml")
	if err := os.WriteFile(gpuFile, []byte(gpuTests), 0o644); err != nil {
		t.Fatal(err)
	}
	out = testutil.Run(t, time.Minute, promtool, "test", "rules", gpuFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules (GPU usage):\n%s", out)
	}
}

// opsTests are promtool rule tests of the alerts on the agent's own runs.
const opsTests = `rule_files: [gpuhost.rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      # n1's nvml collector fails from minute 0; n2's never does.
      - series: 'gpuhost_collector_errors{node="n1", collector="gpu"}'
        values: '1x60'
      - series: 'gpuhost_collector_errors{node="n2", collector="gpu"}'
        values: '0x60'
      # n1's runs all exit 2; n2 has one good run among them.
      - series: 'gpuhost_runs_total{node="n1", exit_code="2"}'
        values: '0+1x60'
      - series: 'gpuhost_runs_total{node="n1", exit_code="0"}'
        values: '0x60'
      - series: 'gpuhost_runs_total{node="n2", exit_code="2"}'
        values: '0+1x60'
      - series: 'gpuhost_runs_total{node="n2", exit_code="0"}'
        values: '0x30 1x30'
      # n1 skips three ticks, n2 one.
      - series: 'gpuhost_runs_skipped_total{node="n1"}'
        values: '0x10 1 2 3x47'
      - series: 'gpuhost_runs_skipped_total{node="n2"}'
        values: '0x10 1x49'
      # n1's agent cannot patch its node each run; n2's once.
      - series: 'gpuhost_node_mark_errors_total{node="n1"}'
        values: '0+1x60'
      - series: 'gpuhost_node_mark_errors_total{node="n2"}'
        values: '0x30 1x30'
      # n1 fails a high GPU check, n2 a high check of another domain.
      - series: 'gpuhost_check_status{node="n1", id="GH-GPU-007", severity="high", status="fail"}'
        values: '1x60'
      - series: 'gpuhost_check_status{node="n2", id="GH-SSH-004", severity="high", status="fail"}'
        values: '1x60'
    alert_rule_test:
      - eval_time: 20m
        alertname: GpuhostCollectorErrors
      - eval_time: 31m
        alertname: GpuhostCollectorErrors
        exp_alerts:
          - exp_labels: {node: n1, collector: gpu, severity: warning}
            exp_annotations:
              summary: "gpuhost collector gpu fails on n1; its checks error"
      - eval_time: 45m
        alertname: GpuhostScanUntrusted
        exp_alerts:
          - exp_labels: {node: n1, severity: warning}
            exp_annotations:
              summary: "Every gpuhost scan of n1 in 3h was untrusted (exit 2)"
      - eval_time: 30m
        alertname: GpuhostRunsSkipped
        exp_alerts:
          - exp_labels: {node: n1, severity: info}
            exp_annotations:
              summary: "gpuhost runs on n1 overrun the interval; lengthen --interval"
      - eval_time: 16m
        alertname: GpuhostGPUHealthCheckFailed
        exp_alerts:
          - exp_labels: {node: n1, id: GH-GPU-007, severity: warning}
            exp_annotations:
              summary: "n1 fails GPU health check GH-GPU-007 (row remaps, Xid, PCIe link, ECC mode)"
              description: "Run ` + "`gpuhost history`" + ` on the node for the GPU and the message; drain it before the next job lands."
      - eval_time: 45m
        alertname: GpuhostNodeMarkFailing
        exp_alerts:
          - exp_labels: {node: n1, severity: warning}
            exp_annotations:
              summary: "The gpuhost agent on n1 cannot set its node's marks for the scheduler"
              description: "Its log says why (node marks not set): node-marks.yaml not applied, a token without the node's name, or the API server unreachable. The node keeps the marks it had."
      - eval_time: 31m
        alertname: GpuhostAgentAbsent
        exp_alerts:
          - exp_labels: {severity: warning}
            exp_annotations:
              summary: "No gpuhost agent reports metrics"
  - interval: 1m
    input_series:
      - series: 'gpuhost_last_run_timestamp_seconds{node="n1"}'
        values: '0x60'
    alert_rule_test:
      - eval_time: 40m
        alertname: GpuhostAgentAbsent
`

// gpuTests are promtool rule tests of the GPU usage alerts: each alert's
// series fire it, and a GPU beside them that is fine does not.
const gpuTests = `rule_files: [gpuhost.rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      # GPU 0 holds 8 GiB idle; GPU 1 is busy and in use by a pod.
      - series: 'DCGM_FI_DEV_FB_USED{Hostname="n1", UUID="GPU-0", gpu="0"}'
        values: '8192x60'
      - series: 'DCGM_FI_DEV_GPU_UTIL{Hostname="n1", UUID="GPU-0", gpu="0"}'
        values: '0x60'
      - series: 'DCGM_FI_DEV_FB_USED{Hostname="n1", UUID="GPU-1", gpu="1"}'
        values: '8192x60'
      - series: 'DCGM_FI_DEV_GPU_UTIL{Hostname="n1", UUID="GPU-1", gpu="1"}'
        values: '90x60'
      - series: 'gpuhost_gpu_processes{Hostname="n1", UUID="GPU-1", gpu="1"}'
        values: '1x60'
      - series: 'gpuhost_gpu_container_processes{Hostname="n1", UUID="GPU-1", gpu="1"}'
        values: '1x60'
      # GPU 2 is busy with a process in no container.
      - series: 'DCGM_FI_DEV_FB_USED{Hostname="n1", UUID="GPU-2", gpu="2"}'
        values: '100x60'
      - series: 'DCGM_FI_DEV_GPU_UTIL{Hostname="n1", UUID="GPU-2", gpu="2"}'
        values: '95x60'
      - series: 'gpuhost_gpu_processes{Hostname="n1", UUID="GPU-2", gpu="2"}'
        values: '1x60'
      - series: 'gpuhost_gpu_container_processes{Hostname="n1", UUID="GPU-2", gpu="2"}'
        values: '0x60'
      # GPU 1 runs 2 C below slowdown, GPU 2 twenty.
      - series: 'DCGM_FI_DEV_GPU_TEMP{Hostname="n1", UUID="GPU-1", gpu="1"}'
        values: '86x60'
      - series: 'gpuhost_gpu_slowdown_temperature_celsius{Hostname="n1", UUID="GPU-1", gpu="1"}'
        values: '88x60'
      - series: 'DCGM_FI_DEV_GPU_TEMP{Hostname="n1", UUID="GPU-2", gpu="2"}'
        values: '68x60'
      - series: 'gpuhost_gpu_slowdown_temperature_celsius{Hostname="n1", UUID="GPU-2", gpu="2"}'
        values: '88x60'
      # GPU 3 counts a double-bit ECC error at minute 20; GPU 2 an Xid at 40.
      - series: 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{Hostname="n1", UUID="GPU-3", gpu="3"}'
        values: '0x20 1x40'
      - series: 'gpuhost_gpu_xid_errors_total{Hostname="n1", UUID="GPU-2", xid="79"}'
        values: '0x40 1x20'
      # n1 loses a GPU at minute 30.
      - series: 'gpuhost_gpus{node="n1"}'
        values: '8x30 7x30'
      - series: 'gpuhost_gpu_nvml_up{node="n1"}'
        values: '1x60'
      # n2's NVML stops answering at minute 10.
      - series: 'gpuhost_gpu_nvml_up{node="n2"}'
        values: '1x10 0x50'
    alert_rule_test:
      - eval_time: 20m
        alertname: GpuhostGPUMemoryHeldIdle
      - eval_time: 31m
        alertname: GpuhostGPUMemoryHeldIdle
        exp_alerts:
          - exp_labels: {Hostname: n1, UUID: GPU-0, gpu: "0", severity: warning}
            exp_annotations:
              summary: "GPU 0 (GPU-0) on n1 holds 8192 MiB with near-zero utilization for 30 minutes"
              description: "A leaked allocation or a stuck job: gpuhost_gpu_process_memory_bytes names the PID and cgroup holding it."
      - eval_time: 11m
        alertname: GpuhostGPUBusyOutsideContainers
        exp_alerts:
          - exp_labels: {Hostname: n1, UUID: GPU-2, gpu: "2", severity: critical}
            exp_annotations:
              summary: "GPU 2 (GPU-2) on n1 is busy with no container using it"
              description: "Work the scheduler did not place (a login session, a miner): gpuhost_gpu_process_memory_bytes names the PID and cgroup."
      - eval_time: 6m
        alertname: GpuhostGPUNearSlowdown
        exp_alerts:
          - exp_labels: {Hostname: n1, UUID: GPU-1, gpu: "1", severity: warning}
            exp_annotations:
              summary: "GPU 1 (GPU-1) on n1 is within 2 C of its slowdown temperature"
      - eval_time: 10m
        alertname: GpuhostGPUErrorBurst
      - eval_time: 25m
        alertname: GpuhostGPUErrorBurst
        exp_alerts:
          - exp_labels: {Hostname: n1, UUID: GPU-3, gpu: "3", severity: critical}
            exp_annotations:
              summary: "GPU GPU-3 on n1 reported uncorrectable ECC errors or Xid events in the last 10 minutes"
              description: "Drain the node and run gpuhost scan host: GH-GPU-004 and GH-GPU-014 name the errors."
      - eval_time: 45m
        alertname: GpuhostGPUErrorBurst
        exp_alerts:
          - exp_labels: {Hostname: n1, UUID: GPU-2, severity: critical}
            exp_annotations:
              summary: "GPU GPU-2 on n1 reported uncorrectable ECC errors or Xid events in the last 10 minutes"
              description: "Drain the node and run gpuhost scan host: GH-GPU-004 and GH-GPU-014 name the errors."
      - eval_time: 25m
        alertname: GpuhostGPUGone
      - eval_time: 40m
        alertname: GpuhostGPUGone
        exp_alerts:
          - exp_labels: {node: n1, severity: critical}
            exp_annotations:
              summary: "n1 sees fewer GPUs than it did in the last 6 hours (7)"
              description: "A GPU fell off the bus or NVML lost it: check dmesg for Xid 79 and the PCIe link (GH-GPU-010, GH-GPU-011)."
      - eval_time: 20m
        alertname: GpuhostNVMLDown
      - eval_time: 40m
        alertname: GpuhostNVMLDown
        exp_alerts:
          - exp_labels: {node: n2, severity: warning}
            exp_annotations:
              summary: "NVML does not answer the gpuhost agent on n2"
`

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
