package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/reports"
)

// marks records what the agent asked its node marker for; the real marker
// is held to a real API server in deploy/nodemark_test.go.
type marks struct {
	mu    sync.Mutex
	calls [][]string
	err   error
}

func (m *marks) Mark(_ context.Context, failing []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, failing)
	return m.err
}

func nodeReport(results ...reports.Result) *reports.Report {
	rep := &reports.Report{Schema: reports.Schema, Target: reports.Target{Kind: "host", Ref: "node-1"}, Results: results}
	rep.Summarize()
	return rep
}

func TestNodeMarkedByCriticalAndHighFailuresOnly(t *testing.T) {
	var rep *reports.Report
	var scanErr error
	m := &marks{}
	var log bytes.Buffer
	a, err := New(Config{
		Scan:     func(context.Context) (*reports.Report, error) { return rep, scanErr },
		DBPath:   filepath.Join(t.TempDir(), "history.db"),
		Interval: time.Hour,
		Node:     m,
		Log:      slog.New(slog.NewTextHandler(&log, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	gauge := func() float64 {
		return scrape(t, a.Handler(), "")["gpuhost_node_marked"].Metric[0].GetGauge().GetValue()
	}
	errorsTotal := func() float64 {
		return scrape(t, a.Handler(), "")["gpuhost_node_mark_errors_total"].Metric[0].GetCounter().GetValue()
	}

	rep = nodeReport(
		reports.Result{ID: "GH-SSH-002", Severity: "high", Status: reports.StatusFail},
		reports.Result{ID: "GH-SSH-001", Severity: "critical", Status: reports.StatusFail},
		reports.Result{ID: "GH-NET-001", Severity: "medium", Status: reports.StatusFail},
		reports.Result{ID: "GH-KEY-001", Severity: "critical", Status: reports.StatusWaived},
		reports.Result{ID: "GH-TLS-001", Severity: "high", Status: reports.StatusPass},
	)
	if r := a.RunOnce(context.Background()); r.ExitCode != 1 {
		t.Fatalf("failing run: exit %d", r.ExitCode)
	}
	if len(m.calls) != 1 || !slices.Equal(m.calls[0], []string{"GH-SSH-001", "GH-SSH-002"}) {
		t.Fatalf("marked with %q, want the critical and high failures, sorted", m.calls)
	}
	if gauge() != 1 {
		t.Errorf("gpuhost_node_marked = %v after marking", gauge())
	}

	// An untrusted run, with or without a report, changes nothing.
	scanErr = errors.New("facts unreadable")
	a.RunOnce(context.Background())
	scanErr = nil
	rep = nodeReport(reports.Result{ID: "GH-AUD-007", Severity: "high", Status: reports.StatusError})
	if r := a.RunOnce(context.Background()); r.ExitCode != 2 {
		t.Fatalf("errored check: exit %d, want 2", r.ExitCode)
	}
	if len(m.calls) != 1 || gauge() != 1 {
		t.Errorf("untrusted runs marked the node: calls %q, gauge %v", m.calls, gauge())
	}
	if n := strings.Count(log.String(), "the scan could not be trusted"); n != 2 {
		t.Errorf("the log says %d times that untrusted runs left the marks alone, want 2:\n%s", n, log.String())
	}

	// Passing again, a medium failure aside: the marks go.
	rep = nodeReport(reports.Result{ID: "GH-NET-001", Severity: "medium", Status: reports.StatusFail})
	a.RunOnce(context.Background())
	if len(m.calls) != 2 || len(m.calls[1]) != 0 || gauge() != 0 {
		t.Errorf("passing run: calls %q, gauge %v; want an unmark", m.calls, gauge())
	}

	// A mark the API server refused is counted and leaves the gauge as it was.
	m.err = errors.New("forbidden")
	rep = nodeReport(reports.Result{ID: "GH-SSH-001", Severity: "critical", Status: reports.StatusFail})
	a.RunOnce(context.Background())
	if errorsTotal() != 1 || gauge() != 0 {
		t.Errorf("refused mark: errors %v, gauge %v; want 1 and 0", errorsTotal(), gauge())
	}
	if !strings.Contains(log.String(), "forbidden") {
		t.Errorf("the refusal is not in the log:\n%s", log.String())
	}
}

func TestNodeMarkMetricsOnlyWhenMarking(t *testing.T) {
	a := newAgent(t, Config{})
	a.RunOnce(context.Background())
	fams := scrape(t, a.Handler(), "")
	for _, name := range NodeMarkMetricNames {
		if fams[name] != nil {
			t.Errorf("%s exported by an agent that marks no node", name)
		}
	}
}
