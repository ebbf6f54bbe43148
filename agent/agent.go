// Package agent is the scheduled scanner: it runs the scan pipeline on a
// schedule, one run at a time, keeps every completed run in an embedded
// SQLite history, and serves Prometheus metrics, health and the latest
// report over HTTP.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
)

// ScanFunc performs one scan (collect, evaluate) and returns its report. An
// error means the run produced no report; it is recorded with exit code 2.
type ScanFunc func(ctx context.Context) (*reports.Report, error)

// Config configures an Agent.
type Config struct {
	// Scan is the work of one run. Required.
	Scan ScanFunc
	// Interval between runs; ignored when Cron is set.
	Interval time.Duration
	// Cron is a standard five-field cron expression (or a descriptor such
	// as @hourly) that replaces Interval.
	Cron string
	// Jitter is the largest random delay added to each tick, as a fraction
	// of the gap to it; 0.1 when zero, none when negative. It spreads a
	// fleet's runs so they do not hit shared services at once.
	Jitter float64
	// RunAtStart runs once immediately instead of waiting for the first tick.
	RunAtStart bool
	// FailOn is the --fail-on threshold for the run's exit code ("high" when empty).
	FailOn string
	// FailOnSkip, when set, makes a run whose check at or above it could not
	// be evaluated exit 1 as well.
	FailOnSkip string
	// DBPath is the SQLite history. Required.
	DBPath string
	// Retain bounds the history.
	Retain Retention
	// Listen is the HTTP address ("" serves nothing).
	Listen string
	// TLSCert and TLSKey, when both set, make the listener TLS 1.3 only.
	TLSCert, TLSKey string
	// TokenFile holds a bearer token required on every endpoint but /healthz.
	TokenFile string
	// GPU, when set, is sampled every GPUInterval (15 s when zero) for the
	// GPU metrics, apart from the scans.
	GPU         *GPUSampler
	GPUInterval time.Duration
	// Node, when set, is told after every trusted run which critical and
	// high checks fail, and marks the node the agent runs on for the
	// scheduler (agent/nodemark). An untrusted run leaves the marks alone.
	Node NodeMarker
	// Log receives the agent's log; slog.Default when nil.
	Log *slog.Logger
	// Now replaces time.Now, for tests.
	Now func() time.Time
}

// Agent runs scans on a schedule. Its methods are safe for concurrent use.
type Agent struct {
	cfg     Config
	log     *slog.Logger
	sched   cron.Schedule
	metrics *metrics
	creds   *credentials

	runMu sync.Mutex // held by the one run in progress

	mu        sync.Mutex
	store     *Store
	dbErr     error
	lastRunAt time.Time
	lastErr   error
	latest    []byte
	runs      int
	skipped   int
	addr      string
}

// every is a fixed-interval schedule.
type every time.Duration

func (e every) Next(t time.Time) time.Time { return t.Add(time.Duration(e)) }

// New checks cfg and returns an Agent. The history database is opened by
// Run, and reopened on every run until it works, so an unwritable database
// is a health failure rather than a crash loop.
func New(cfg Config) (*Agent, error) {
	if cfg.Scan == nil {
		return nil, errors.New("agent: no scan function")
	}
	if cfg.DBPath == "" {
		return nil, errors.New("agent: --db is required")
	}
	if cfg.FailOn == "" {
		cfg.FailOn = "high"
	}
	if !reports.ValidSeverity(cfg.FailOn) {
		return nil, fmt.Errorf("agent: --fail-on %q: want one of %s", cfg.FailOn, strings.Join(reports.Severities, ", "))
	}
	if cfg.FailOnSkip != "" && !reports.ValidSeverity(cfg.FailOnSkip) {
		return nil, fmt.Errorf("agent: --fail-on-skip %q: want one of %s", cfg.FailOnSkip, strings.Join(reports.Severities, ", "))
	}
	if cfg.Jitter == 0 {
		cfg.Jitter = 0.1
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, errors.New("agent: --tls-cert and --tls-key go together")
	}
	a := &Agent{cfg: cfg, log: cfg.Log, metrics: newMetrics()}
	switch {
	case cfg.Cron != "":
		s, err := cron.ParseStandard(cfg.Cron)
		if err != nil {
			return nil, fmt.Errorf("agent: --cron %q: %w", cfg.Cron, err)
		}
		a.sched = s
	case cfg.Interval > 0:
		a.sched = every(cfg.Interval)
	default:
		return nil, errors.New("agent: --interval must be positive (or give --cron)")
	}
	if cfg.TLSCert != "" || cfg.TokenFile != "" {
		cm := credentialMetrics(a.metrics)
		if cfg.TLSCert != "" {
			a.metrics.reg.MustRegister(cm[0], cm[1])
		}
		a.metrics.reg.MustRegister(cm[2])
	}
	if cfg.Node != nil {
		a.metrics.reg.MustRegister(nodeMarkMetrics(a.metrics)...)
	}
	if cfg.GPU != nil {
		a.metrics.reg.MustRegister(cfg.GPU.Collectors()...)
		if a.cfg.GPUInterval <= 0 {
			a.cfg.GPUInterval = 15 * time.Second
		}
	}
	creds, err := newCredentials(cfg, a.log, a.metrics)
	if err != nil {
		return nil, err
	}
	a.creds = creds
	return a, nil
}

// Run runs the agent until ctx ends: it serves HTTP when Listen is set and
// runs scans on the schedule. It returns nil when ctx is cancelled.
func Run(ctx context.Context, cfg Config) error {
	a, err := New(cfg)
	if err != nil {
		return err
	}
	return a.Run(ctx)
}

// Run serves and schedules until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	serveErr := make(chan error, 1)
	if a.cfg.Listen != "" {
		srv, ln, err := a.listen()
		if err != nil {
			return err
		}
		a.log.Info("agent listening", "address", ln.Addr().String(), "tls", a.cfg.TLSCert != "")
		go func() { serveErr <- a.serve(ctx, srv, ln) }()
	}
	a.openStore(ctx)
	defer a.closeStore()
	gpuDone := make(chan struct{})
	go func() { defer close(gpuDone); a.sampleGPUs(ctx) }()
	loopErr := a.loop(ctx)
	cancel()
	<-gpuDone
	if a.cfg.Listen != "" {
		if err := <-serveErr; err != nil {
			return err
		}
	}
	return loopErr
}

// sampleGPUs samples the GPUs every GPUInterval until ctx ends. A sample
// that fails is logged when its error differs from the last one, so a host
// without a driver says so once, not every 15 seconds.
func (a *Agent) sampleGPUs(ctx context.Context) {
	if a.cfg.GPU == nil {
		return
	}
	t := time.NewTicker(a.cfg.GPUInterval)
	defer t.Stop()
	last := ""
	for {
		err := a.cfg.GPU.Sample(ctx)
		switch {
		case err != nil && err.Error() != last:
			a.log.Warn("agent: GPU sample failed", "err", err)
			last = err.Error()
		case err == nil && last != "":
			a.log.Info("agent: GPU sampling works again")
			last = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// loop fires runs on the schedule. A tick that finds a run still going is
// skipped and counted: runs never stack up behind a slow one.
func (a *Agent) loop(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	fire := func() {
		if !a.runMu.TryLock() {
			a.mu.Lock()
			a.skipped++
			a.mu.Unlock()
			a.metrics.skipped.Inc()
			a.log.Warn("previous run still in progress; run skipped")
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer a.runMu.Unlock()
			a.runOnce(ctx)
			// The agent then sleeps for the interval: hand the run's garbage
			// (facts, evaluation) back to the system now rather than as the
			// scavenger gets round to it.
			debug.FreeOSMemory()
		}()
	}
	if a.cfg.RunAtStart {
		fire()
	}
	for {
		now := a.cfg.Now()
		next := a.sched.Next(now)
		wait := next.Sub(now)
		if a.cfg.Jitter > 0 && wait > 0 {
			wait += time.Duration(rand.Float64() * a.cfg.Jitter * float64(wait))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
			fire()
		}
	}
}

// RunOnce performs one run now, waiting for any run in progress, and
// returns the recorded run.
func (a *Agent) RunOnce(ctx context.Context) *RunRecord {
	a.runMu.Lock()
	defer a.runMu.Unlock()
	return a.runOnce(ctx)
}

func (a *Agent) runOnce(ctx context.Context) *RunRecord {
	start := a.cfg.Now()
	rep, err := a.cfg.Scan(ctx)
	dur := a.cfg.Now().Sub(start)
	r := &RunRecord{StartedAt: start, Duration: dur, Report: rep}
	if err != nil {
		r.ExitCode, r.Error = scan.ExitUntrusted, err.Error()
		a.log.Error("scan failed", "error", err)
	} else {
		r.ExitCode = scan.ExitCode([]*reports.Report{rep}, scan.Thresholds{FailOn: a.cfg.FailOn, FailOnSkip: a.cfg.FailOnSkip})
		r.Target = rep.Target.Kind + ":" + rep.Target.Ref
		r.PolicyDigest, r.FactsDigest, r.Summary = rep.PolicyDigest, rep.FactsDigest, rep.Summary
	}
	if ctx.Err() != nil && err != nil {
		// Shutting down mid-run: the run did not complete.
		return r
	}
	a.metrics.observe(r)
	// A completed run is recorded even when shutdown began meanwhile: the
	// write is short, and losing a finished run is what the history is for.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	a.record(wctx, r)
	cancel()
	a.mu.Lock()
	a.runs++
	a.lastRunAt, a.lastErr = a.cfg.Now(), err
	if rep != nil {
		if b, jerr := marshalReport(rep); jerr == nil {
			a.latest = b
		}
	}
	a.mu.Unlock()
	a.log.Info("run complete", "exit_code", r.ExitCode, "duration", dur, "id", r.ID)
	a.markNode(ctx, r)
	return r
}

// record writes the run to the history, reopening the database when it was
// not open; a failure is logged and shown on /healthz, and the agent goes on.
func (a *Agent) record(ctx context.Context, r *RunRecord) {
	a.mu.Lock()
	st := a.store
	a.mu.Unlock()
	if st == nil {
		st = a.openStore(ctx)
		if st == nil {
			return
		}
	}
	id, err := st.Insert(ctx, r, a.cfg.Retain)
	a.mu.Lock()
	a.dbErr = err
	a.mu.Unlock()
	if err != nil {
		a.log.Error("history not written", "db", a.cfg.DBPath, "error", err)
		return
	}
	r.ID = id
}

func (a *Agent) openStore(ctx context.Context) *Store {
	st, err := OpenStore(ctx, a.cfg.DBPath)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.dbErr = err
	if err != nil {
		a.log.Error("history database unusable", "db", a.cfg.DBPath, "error", err)
		return nil
	}
	a.store = st
	return st
}

func (a *Agent) closeStore() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.store != nil {
		a.store.Close()
		a.store = nil
	}
}

// Stats is a snapshot of the agent's counters.
type Stats struct {
	Runs, Skipped int
}

// Stats returns the completed and skipped run counts.
func (a *Agent) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Stats{Runs: a.runs, Skipped: a.skipped}
}

// health is nil when the last run completed and the history is writable,
// else the reason it is not.
func (a *Agent) health() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.dbErr != nil:
		return fmt.Errorf("history database: %w", a.dbErr)
	case a.lastRunAt.IsZero():
		return errors.New("no run has completed yet")
	case a.lastErr != nil:
		return fmt.Errorf("last run failed: %w", a.lastErr)
	}
	return nil
}

// Close closes the history database, for callers that used RunOnce
// without Run.
func (a *Agent) Close() error {
	a.closeStore()
	return nil
}
