package agent

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/reports"
)

// DriftPrefix marks the drift checks whose failures gpuhost_drift_checks_failing counts.
const DriftPrefix = "GH-DRIFT-"

// MetricNames lists every metric the agent exports; the deploy tests hold
// the alert rules to it.
var MetricNames = []string{
	"gpuhost_last_run_timestamp_seconds",
	"gpuhost_last_run_duration_seconds",
	"gpuhost_check_status",
	"gpuhost_results",
	"gpuhost_drift_checks_failing",
	"gpuhost_collector_errors",
	"gpuhost_runs_skipped_total",
	"gpuhost_runs_total",
}

// CredentialMetricNames are exported beside MetricNames when the agent
// serves TLS (the certificate's two timestamps) or checks a token (the
// reload errors, both kinds).
var CredentialMetricNames = []string{
	"gpuhost_agent_tls_certificate_not_before_timestamp_seconds",
	"gpuhost_agent_tls_certificate_not_after_timestamp_seconds",
	"gpuhost_agent_credential_reload_errors_total",
}

// metrics lives in its own registry: the agent exports what it documents,
// not whatever a dependency registers globally.
type metrics struct {
	reg             *prometheus.Registry
	lastRun         prometheus.Gauge
	lastDuration    prometheus.Gauge
	checkStatus     *prometheus.GaugeVec
	results         *prometheus.GaugeVec
	drift           prometheus.Gauge
	collectorErrors *prometheus.GaugeVec
	skipped         prometheus.Counter
	runs            *prometheus.CounterVec
	// The certificate gauges are registered only when the agent serves
	// TLS, so a plain listener exports no zero timestamps.
	certNotBefore, certNotAfter prometheus.Gauge
	certLoaded                  bool
	reloadErrors                *prometheus.CounterVec
	// Registered only when the agent marks its node.
	nodeMarked     prometheus.Gauge
	nodeMarkErrors prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		lastRun: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpuhost_last_run_timestamp_seconds", Help: "Unix time the last completed run started.",
		}),
		lastDuration: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpuhost_last_run_duration_seconds", Help: "Wall time of the last completed run.",
		}),
		checkStatus: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuhost_check_status", Help: "1 for each check's status in the last run.",
		}, []string{"id", "severity", "status"}),
		results: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuhost_results", Help: "Results of the last run by status and severity.",
		}, []string{"status", "severity"}),
		drift: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpuhost_drift_checks_failing", Help: "Failing drift checks (" + DriftPrefix + "*) in the last run.",
		}),
		collectorErrors: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuhost_collector_errors", Help: "1 for each collector that failed in the last run.",
		}, []string{"collector"}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpuhost_runs_skipped_total", Help: "Ticks skipped because the previous run was still in progress.",
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuhost_runs_total", Help: "Completed runs by exit code.",
		}, []string{"exit_code"}),
	}
	m.reg.MustRegister(m.lastRun, m.lastDuration, m.checkStatus, m.results, m.drift, m.collectorErrors, m.skipped, m.runs)
	// Exit codes exist from the start, so rate() over them works at once.
	for _, c := range []string{"0", "1", "2"} {
		m.runs.WithLabelValues(c)
	}
	return m
}

// observe sets the per-run gauges from one completed run. A run without a
// report clears them: stale results must not read as current.
func (m *metrics) observe(r *RunRecord) {
	m.runs.WithLabelValues(strconv.Itoa(r.ExitCode)).Inc()
	m.lastRun.Set(float64(r.StartedAt.UnixMilli()) / 1000)
	m.lastDuration.Set(r.Duration.Seconds())
	m.checkStatus.Reset()
	m.results.Reset()
	m.collectorErrors.Reset()
	drift := 0
	if r.Report != nil {
		for _, res := range r.Report.Results {
			m.checkStatus.WithLabelValues(res.ID, res.Severity, res.Status).Set(1)
			m.results.WithLabelValues(res.Status, res.Severity).Inc()
			if res.Status == reports.StatusFail && strings.HasPrefix(res.ID, DriftPrefix) {
				drift++
			}
		}
		for name, st := range r.Report.Collectors {
			if st.Status == facts.StatusError {
				m.collectorErrors.WithLabelValues(name).Set(1)
			}
		}
	}
	m.drift.Set(float64(drift))
}

func marshalReport(rep *reports.Report) ([]byte, error) {
	return json.MarshalIndent(rep, "", "  ")
}
