package agent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
	"github.com/gpuhost/gpuhost/target"
)

// BenchmarkAgentRun is one full agent run on the machine running the
// benchmark: collect the live host's facts, evaluate the default pack,
// record the run in the history and update the metrics. The target
// is under a second per run.
func BenchmarkAgentRun(b *testing.B) {
	e, err := scan.Pack{}.Engine(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	sc := scan.New(e)
	opts := target.Options{Log: quietLog(), ProbeTimeout: time.Second, ProbeConcurrency: 16}
	a, err := New(Config{
		DBPath:   filepath.Join(b.TempDir(), "history.db"),
		Interval: time.Hour,
		Log:      quietLog(),
		Retain:   Retention{MaxRuns: 1000},
		Scan: func(ctx context.Context) (*reports.Report, error) {
			f, err := target.Host(ctx, "/", opts)
			if err != nil {
				return nil, err
			}
			return sc.Facts(ctx, f)
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := a.RunOnce(ctx); r.ID == 0 {
			b.Fatalf("run not recorded: %+v", r)
		}
	}
}
