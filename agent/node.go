package agent

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
)

// NodeMarker marks the node the agent runs on; agent/nodemark does it
// through the Kubernetes API.
type NodeMarker interface {
	// Mark marks the node when failing names any check and removes the
	// marks when it is empty.
	Mark(ctx context.Context, failing []string) error
}

// MarkSeverity is the lowest severity whose failure marks the node: a
// scheduler should steer work away from a node failing a critical or high
// check, not from one with a medium finding.
const MarkSeverity = "high"

// NodeMarkMetricNames are exported beside MetricNames when the agent marks
// its node.
var NodeMarkMetricNames = []string{
	"gpuhost_node_marked",
	"gpuhost_node_mark_errors_total",
}

func nodeMarkMetrics(m *metrics) []prometheus.Collector {
	m.nodeMarked = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gpuhost_node_marked", Help: "1 while the agent has marked its node noncompliant, 0 once it removed the marks; as last set, so a failed patch leaves it as it was.",
	})
	m.nodeMarkErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gpuhost_node_mark_errors_total", Help: "Node marks the API server did not take (unreachable, refused, denied).",
	})
	return []prometheus.Collector{m.nodeMarked, m.nodeMarkErrors}
}

// markNode hands a completed run's verdict to the node marker. A run that
// could not be trusted says nothing about the node, so it neither marks
// nor unmarks: a broken collector must not clear a real failure.
func (a *Agent) markNode(ctx context.Context, r *RunRecord) {
	if a.cfg.Node == nil {
		return
	}
	if r.Report == nil || r.ExitCode == scan.ExitUntrusted {
		a.log.Warn("node marks left as they were: the scan could not be trusted", "exit_code", r.ExitCode)
		return
	}
	failing := failingAt(r.Report, MarkSeverity)
	// Like the history, a completed run's marks are sent even when
	// shutdown began meanwhile; the marker bounds its own request.
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := a.cfg.Node.Mark(mctx, failing); err != nil {
		a.metrics.nodeMarkErrors.Inc()
		a.log.Error("node marks not set", "failing", failing, "err", err)
		return
	}
	if len(failing) > 0 {
		a.metrics.nodeMarked.Set(1)
		a.log.Info("node marked noncompliant", "failing", failing)
		return
	}
	a.metrics.nodeMarked.Set(0)
	a.log.Info("node compliant: marks removed")
}

// failingAt lists, sorted, the checks of rep that fail at threshold or
// above; a waived failure is not among them.
func failingAt(rep *reports.Report, threshold string) []string {
	var ids []string
	for _, res := range rep.Results {
		if res.FailsAt(threshold) {
			ids = append(ids, res.ID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}
