package agent

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuhost/gpuhost/reports"
)

// helperEnv makes the test binary a history writer that never stops, for
// the kill -9 test.
const helperEnv = "GPUHOST_AGENT_WRITER_DB"

func TestMain(m *testing.M) {
	if db := os.Getenv(helperEnv); db != "" {
		writeForever(db)
		return
	}
	os.Exit(m.Run())
}

// writeForever inserts runs and prints each id once its transaction has
// committed: every printed id is a run the database promised to keep.
func writeForever(db string) {
	ctx := context.Background()
	st, err := OpenStore(ctx, db)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	rep := sampleReport("fail")
	for {
		id, err := st.Insert(ctx, &RunRecord{StartedAt: time.Now(), Duration: time.Millisecond, Target: "host:test", Report: rep, Summary: rep.Summary}, Retention{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Println(id)
	}
}

func sampleReport(sshStatus string) *reports.Report {
	rep := &reports.Report{
		Schema: reports.Schema,
		Target: reports.Target{Kind: "host", Ref: "node-1"},
		Results: []reports.Result{
			{ID: "GH-SSH-001", Severity: "critical", Status: sshStatus},
			{ID: "GH-DRIFT-001", Severity: "high", Status: "fail"},
			{ID: "GH-TLS-001", Severity: "high", Status: "pass"},
			{ID: "GH-GPU-001", Severity: "medium", Status: "skip"},
		},
		FactsDigest:  "sha256:f",
		PolicyDigest: "sha256:p",
		Collectors: map[string]reports.CollectorStatus{
			"ssh": {Status: "ok"},
			"gpu": {Status: "error", Reason: "boom"},
		},
	}
	rep.Summarize()
	return rep
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newAgent(t *testing.T, cfg Config) *Agent {
	t.Helper()
	if cfg.Scan == nil {
		cfg.Scan = func(context.Context) (*reports.Report, error) { return sampleReport("fail"), nil }
	}
	if cfg.DBPath == "" {
		cfg.DBPath = filepath.Join(t.TempDir(), "history.db")
	}
	if cfg.Interval == 0 && cfg.Cron == "" {
		cfg.Interval = time.Hour
	}
	cfg.Log = quietLog()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// waitFor polls cond: a liveness bound, not a speed assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestKill9LosesNoCompletedRun(t *testing.T) {
	db := filepath.Join(t.TempDir(), "history.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+db)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var last int64
	for sc.Scan() {
		id, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			t.Fatalf("helper wrote %q", sc.Text())
		}
		last = id
		if last >= 200 {
			break
		}
	}
	// The writer is mid-loop, most likely inside a transaction.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if last < 200 {
		t.Fatalf("helper stopped after %d runs: %s", last, stderr.String())
	}

	st, err := OpenStore(context.Background(), db)
	if err != nil {
		t.Fatalf("reopening after kill -9: %v", err)
	}
	defer st.Close()
	if v, err := st.Check(context.Background()); err != nil || v != "ok" {
		t.Fatalf("integrity_check = %q, %v", v, err)
	}
	n, err := st.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if int64(n) < last {
		t.Fatalf("%d runs survive, but %d were committed before the kill", n, last)
	}
	r, err := st.Get(context.Background(), last)
	if err != nil || r.Report == nil || r.Report.Summary.ByStatus["fail"] != 2 {
		t.Fatalf("the last acknowledged run is not intact: %+v, %v", r, err)
	}
	// Still writable after the crash.
	if _, err := st.Insert(context.Background(), &RunRecord{StartedAt: time.Now()}, Retention{}); err != nil {
		t.Fatalf("insert after crash: %v", err)
	}
}

func TestRetention(t *testing.T) {
	ctx := context.Background()
	st, err := OpenStore(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10 {
		if _, err := st.Insert(ctx, &RunRecord{StartedAt: base.Add(time.Duration(i) * time.Hour)}, Retention{MaxRuns: 5}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := st.List(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 5 || runs[0].ID != 10 || runs[4].ID != 6 {
		t.Fatalf("count retention kept %d runs, newest %v", len(runs), runs)
	}
	// Age: a run 3h after the newest, keeping 2h, leaves it and the runs
	// within two hours of it (ids 9 and 10 are at +8h, +9h; the new one at +11h).
	if _, err := st.Insert(ctx, &RunRecord{StartedAt: base.Add(11 * time.Hour)}, Retention{MaxAge: 2*time.Hour + time.Minute}); err != nil {
		t.Fatal(err)
	}
	runs, _ = st.List(ctx, 0)
	if len(runs) != 2 || runs[0].ID != 11 || runs[1].ID != 10 {
		t.Fatalf("age retention kept %+v", runs)
	}
	if _, err := st.Get(ctx, 1); !errors.Is(err, ErrNoRun) {
		t.Fatalf("pruned run: %v", err)
	}
}

func TestLoopSkipsOverrunAndCountsIt(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	started := 0
	a := newAgent(t, Config{
		Interval:   2 * time.Millisecond,
		Jitter:     -1,
		RunAtStart: true,
		Scan: func(ctx context.Context) (*reports.Report, error) {
			mu.Lock()
			started++
			first := started == 1
			mu.Unlock()
			if first {
				// Overrun: hold the first run across many ticks.
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return sampleReport("pass"), nil
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	waitFor(t, "skipped ticks", func() bool { return a.Stats().Skipped >= 3 })
	mu.Lock()
	if started != 1 {
		t.Errorf("%d runs started while the first was in progress; want them skipped, not stacked", started)
	}
	mu.Unlock()
	close(release)
	waitFor(t, "more runs", func() bool { return a.Stats().Runs >= 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stats := a.Stats()
	fams := scrape(t, a.Handler(), "")
	if got := fams["gpuhost_runs_skipped_total"].Metric[0].GetCounter().GetValue(); int(got) != stats.Skipped {
		t.Errorf("gpuhost_runs_skipped_total = %v, agent counted %d", got, stats.Skipped)
	}
	st, err := OpenStore(context.Background(), a.cfg.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, _ := st.Count(context.Background()); n != stats.Runs {
		t.Errorf("history holds %d runs, agent completed %d", n, stats.Runs)
	}
}

func TestCronSchedule(t *testing.T) {
	if _, err := New(Config{Scan: func(context.Context) (*reports.Report, error) { return nil, nil }, DBPath: "x", Cron: "not cron"}); err == nil {
		t.Fatal("a bad cron expression was accepted")
	}
	a := newAgent(t, Config{Cron: "*/5 * * * *"})
	from := time.Date(2026, 1, 1, 10, 2, 0, 0, time.UTC)
	if got := a.sched.Next(from); !got.Equal(from.Add(3 * time.Minute)) {
		t.Errorf("next cron tick after 10:02 = %v", got)
	}
}

// scrape fetches /metrics and parses it with Prometheus' own text parser.
func scrape(t *testing.T, h http.Handler, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body.String())
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

func TestMetrics(t *testing.T) {
	a := newAgent(t, Config{})
	r := a.RunOnce(context.Background())
	if r.ID != 1 || r.ExitCode != 2 { // the gpu collector errored: untrusted
		t.Fatalf("run %+v", r)
	}
	fams := scrape(t, a.Handler(), "")
	for _, name := range MetricNames {
		if fams[name] == nil {
			t.Errorf("metric %s not exported", name)
		}
	}
	if v := fams["gpuhost_drift_checks_failing"].Metric[0].GetGauge().GetValue(); v != 1 {
		t.Errorf("gpuhost_drift_checks_failing = %v, want 1", v)
	}
	found := false
	for _, m := range fams["gpuhost_check_status"].Metric {
		l := map[string]string{}
		for _, lp := range m.Label {
			l[lp.GetName()] = lp.GetValue()
		}
		if l["id"] == "GH-SSH-001" {
			found = true
			if l["status"] != "fail" || l["severity"] != "critical" || m.GetGauge().GetValue() != 1 {
				t.Errorf("GH-SSH-001: %v = %v", l, m.GetGauge().GetValue())
			}
		}
	}
	if !found {
		t.Error("no gpuhost_check_status for GH-SSH-001")
	}
	ce := fams["gpuhost_collector_errors"].Metric
	if len(ce) != 1 || ce[0].Label[0].GetValue() != "gpu" {
		t.Errorf("gpuhost_collector_errors: %v", ce)
	}
	for _, m := range fams["gpuhost_runs_total"].Metric {
		want := 0.0
		if m.Label[0].GetValue() == "2" {
			want = 1
		}
		if m.GetCounter().GetValue() != want {
			t.Errorf("gpuhost_runs_total{exit_code=%s} = %v", m.Label[0].GetValue(), m.GetCounter().GetValue())
		}
	}

	// /api/v1/runs/latest is the report.
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/runs/latest", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"GH-DRIFT-001"`) {
		t.Errorf("latest: %d %s", rec.Code, rec.Body.String())
	}
}

func TestLatestSurvivesRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	first := newAgent(t, Config{DBPath: db})
	first.RunOnce(context.Background())
	first.Close()
	second := newAgent(t, Config{DBPath: db})
	if st := second.openStore(context.Background()); st == nil {
		t.Fatal("reopening the history failed")
	}
	rec := httptest.NewRecorder()
	second.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/runs/latest", nil))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"GH-SSH-001"`) {
		t.Errorf("latest after restart: %d %s", rec.Code, rec.Body.String())
	}
	empty := newAgent(t, Config{})
	empty.openStore(context.Background())
	rec = httptest.NewRecorder()
	empty.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/runs/latest", nil))
	if rec.Code != 404 {
		t.Errorf("latest with no runs: %d", rec.Code)
	}
}

func TestBearerToken(t *testing.T) {
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, Config{TokenFile: tok})
	a.RunOnce(context.Background())
	h := a.Handler()
	for _, c := range []struct {
		path, auth string
		want       int
	}{
		{"/metrics", "", 401},
		{"/metrics", "Bearer wrong", 401},
		{"/metrics", "Bearer s3cret", 200},
		{"/api/v1/runs/latest", "", 401},
		{"/api/v1/runs/latest", "Bearer s3cret", 200},
		{"/healthz", "", 200}, // reachable without a token
	} {
		req := httptest.NewRequest("GET", c.path, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s with %q: %d, want %d", c.path, c.auth, rec.Code, c.want)
		}
	}
}

func TestHealthz(t *testing.T) {
	healthz := func(a *Agent) (int, string) {
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		return rec.Code, rec.Body.String()
	}
	ok := func(context.Context) (*reports.Report, error) { return sampleReport("pass"), nil }

	a := newAgent(t, Config{Scan: func(context.Context) (*reports.Report, error) {
		rep := sampleReport("pass")
		delete(rep.Collectors, "gpu")
		return rep, nil
	}})
	if code, body := healthz(a); code != 503 || !strings.Contains(body, "no run") {
		t.Errorf("before any run: %d %s", code, body)
	}
	a.RunOnce(context.Background())
	if code, body := healthz(a); code != 200 {
		t.Errorf("after a good run: %d %s", code, body)
	}

	// The database's directory is a file: the run completes, the agent
	// does not crash, and /healthz says why it is unhealthy.
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := newAgent(t, Config{Scan: ok, DBPath: filepath.Join(notDir, "history.db")})
	for range 2 {
		r := bad.RunOnce(context.Background())
		if r.ID != 0 {
			t.Fatalf("run recorded in an unopenable database: %+v", r)
		}
	}
	if code, body := healthz(bad); code != 503 || !strings.Contains(body, "history database") || !strings.Contains(body, notDir) {
		t.Errorf("unwritable database: %d %s", code, body)
	}
	if bad.Stats().Runs != 2 {
		t.Errorf("runs went on without the database: %+v", bad.Stats())
	}

	// The history goes read-only after a good run: /healthz notices at once.
	good := newAgent(t, Config{Scan: ok})
	good.RunOnce(context.Background())
	ro, err := OpenStoreReadOnly(context.Background(), good.cfg.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	good.mu.Lock()
	good.store.Close()
	good.store = ro
	good.mu.Unlock()
	if code, body := healthz(good); code != 503 || !strings.Contains(strings.ToLower(body), "readonly") {
		t.Errorf("read-only history: %d %s", code, body)
	}

	// A failed scan is unhealthy too.
	failing := newAgent(t, Config{Scan: func(context.Context) (*reports.Report, error) { return nil, errors.New("collector exploded") }})
	if r := failing.RunOnce(context.Background()); r.ExitCode != 2 || r.ID != 1 {
		t.Errorf("failed scan: %+v", r)
	}
	if code, body := healthz(failing); code != 503 || !strings.Contains(body, "collector exploded") {
		t.Errorf("failed scan: %d %s", code, body)
	}
}

func TestReadOnlyStore(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "h.db")
	st, err := OpenStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	st.Insert(ctx, &RunRecord{StartedAt: time.Now()}, Retention{})
	if err := st.Writable(ctx); err != nil {
		t.Errorf("a fresh history: %v", err)
	}
	st.Close()
	ro, err := OpenStoreReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Writable(ctx); err == nil {
		t.Error("a read-only history reports itself writable")
	}
	if n, _ := ro.Count(ctx); n != 1 {
		t.Errorf("read-only count %d", n)
	}
	_, err = ro.Insert(ctx, &RunRecord{StartedAt: time.Now()}, Retention{})
	if err == nil || !strings.Contains(err.Error(), db) || !strings.Contains(strings.ToLower(err.Error()), "readonly") {
		t.Errorf("insert into a read-only database: %v", err)
	}
	if _, err := OpenStoreReadOnly(ctx, filepath.Join(t.TempDir(), "absent.db")); err == nil {
		t.Error("a missing history opened read-only without error")
	}
}

func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd}), 0o600)
	return certFile, keyFile
}

func TestTLS13Only(t *testing.T) {
	cert, key := selfSigned(t)
	a := newAgent(t, Config{Listen: "127.0.0.1:0", TLSCert: cert, TLSKey: key})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, "the listener", func() bool { return a.Addr() != "" })
	url := "https://" + a.Addr() + "/healthz"
	get := func(maxVersion uint16) (*http.Response, error) {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, MaxVersion: maxVersion,
		}}}
		return c.Get(url)
	}
	if resp, err := get(tls.VersionTLS12); err == nil {
		resp.Body.Close()
		t.Fatal("a TLS 1.2 client was served")
	}
	resp, err := get(tls.VersionTLS13)
	if err != nil {
		t.Fatalf("TLS 1.3 client: %v", err)
	}
	defer resp.Body.Close()
	if resp.TLS == nil || resp.TLS.Version != tls.VersionTLS13 {
		t.Errorf("negotiated %x", resp.TLS.Version)
	}
}
