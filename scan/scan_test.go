package scan

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/engine/fleet"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan/waivers"
)

func newScanner(t *testing.T, opts ...Option) *Scanner {
	t.Helper()
	e, err := Pack{}.Engine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return New(e, opts...)
}

func loadDoc(t *testing.T) (*engine.Document, []byte) {
	t.Helper()
	data, err := os.ReadFile("testdata/hardened-facts.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := engine.ParseDocument(data, "hardened")
	if err != nil {
		t.Fatal(err)
	}
	return doc, data
}

func TestDocumentBuildsAReport(t *testing.T) {
	doc, data := loadDoc(t)
	rep, err := newScanner(t).Document(context.Background(), doc, data)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Schema != reports.Schema || rep.Target.Kind != "rootfs" || rep.Target.Hostname != "gpu-sample-hardened" {
		t.Errorf("header: %+v", rep.Target)
	}
	if rep.Summary.Total != len(rep.Results) || rep.Summary.Total == 0 {
		t.Errorf("summary %+v for %d results", rep.Summary, len(rep.Results))
	}
	if !strings.HasPrefix(rep.FactsDigest, "sha256:") || rep.PolicyDigest == "" || rep.ToolVersion == "" {
		t.Errorf("digests/version missing: %q %q %q", rep.FactsDigest, rep.PolicyDigest, rep.ToolVersion)
	}
	if len(rep.Collectors) == 0 {
		t.Error("collector statuses not carried into the report")
	}
}

// A report records the thresholds it was judged with and their verdict,
// which is the exit code's: the hardened sample passes at high and fails
// at info; without WithJudgement nothing is recorded.
func TestReportRecordsItsJudgement(t *testing.T) {
	doc, data := loadDoc(t)
	if rep, err := newScanner(t).Document(context.Background(), doc, data); err != nil || rep.Judged != nil {
		t.Fatalf("no judgement asked, recorded %+v (%v)", rep.Judged, err)
	}
	for _, c := range []struct {
		failOn string
		checks []string
		want   string
	}{
		{"none", nil, reports.VerdictPass},
		{"info", nil, reports.VerdictFail},
		{"info", []string{"GH-SSH-001"}, reports.VerdictPass},
	} {
		th := Thresholds{FailOn: c.failOn}
		opts := []Option{WithJudgement(th, c.checks, nil)}
		if c.checks != nil {
			selected, err := Selection{Only: c.checks}.Compile(newScanner(t).eval.(*engine.Engine).Checks())
			if err != nil {
				t.Fatal(err)
			}
			opts = append(opts, WithSelection(selected))
		}
		rep, err := newScanner(t, opts...).Document(context.Background(), doc, data)
		if err != nil {
			t.Fatal(err)
		}
		j := rep.Judged
		if j == nil || j.FailOn != c.failOn || !slices.Equal(j.Checks, c.checks) || j.Verdict != c.want {
			t.Errorf("fail_on %s, checks %v: judged %+v; want verdict %s", c.failOn, c.checks, j, c.want)
		}
		if code := ExitCode([]*reports.Report{rep}, th); (code == ExitPass) != (j.Verdict == reports.VerdictPass) {
			t.Errorf("fail_on %s: verdict %s but exit code %d", c.failOn, j.Verdict, code)
		}
	}
}

// Facts matched against a demo vulnerability DB make a report with its
// caveat, whichever way the document was read: parsed from JSON, or
// decoded first as a fleet scan decodes it.
func TestDemoDBIsACaveat(t *testing.T) {
	_, data := loadDoc(t)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if rep, err := newScanner(t).Document(context.Background(), mustParse(t, data), data); err != nil || len(rep.Caveats) != 0 {
		t.Fatalf("no demo DB, caveats %v (%v)", rep.Caveats, err)
	}
	m["vulnerabilities"] = map[string]any{"db": "/var/lib/trivy", "db_demo": true, "findings": []any{}}
	demo, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var decoded any
	if err := json.Unmarshal(demo, &decoded); err != nil {
		t.Fatal(err)
	}
	fromValue, err := engine.DocumentFromValue(decoded, "demo")
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]*engine.Document{"parsed": mustParse(t, demo), "decoded": fromValue} {
		rep, err := newScanner(t).Document(context.Background(), doc, demo)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rep.Caveats, []string{engine.CaveatDemoDB}) {
			t.Errorf("%s: caveats %v; want the demo DB's", name, rep.Caveats)
		}
	}
}

func mustParse(t *testing.T, data []byte) *engine.Document {
	t.Helper()
	doc, err := engine.ParseDocument(data, "test")
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestCoverageNamesWhatWasNotJudged: a loopback listener the probe could
// not reach makes the TLS checks errors that name it, a public one puts
// the critical GH-TLS-004 among the coverage's gaps, and the listeners no
// check judges are listed in the coverage, each with why.
func TestCoverageNamesWhatWasNotJudged(t *testing.T) {
	f := facts.New(facts.KindHost, "node", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	for _, c := range []string{"network", "tls", "tls_probe"} {
		f.Record(c, facts.StatusOK, "")
	}
	unreachable := func(addr string, loopback bool) facts.TLSProbe {
		return facts.TLSProbe{Address: addr, Loopback: loopback, Unreachable: true, Connections: 1, WeakSuites: []string{},
			Error: "filtered: the TCP connect got no answer within 2s"}
	}
	f.TLS = &facts.TLS{Nginx: []facts.NginxTLS{}, Probes: []facts.TLSProbe{unreachable("0.0.0.0:8443", false), unreachable("127.0.0.1:7000", true)}}
	notJudged := []string{"0.0.0.0:22/tcp (sshd): not TLS: it spoke first, which no TLS server does: \"SSH-2.0-OpenSSH_9.2p1\"",
		"0.0.0.0:5353/udp: not probed: the TLS probe speaks TCP only, so DTLS or QUIC here goes unjudged"}
	f.NoteNotJudged("tls_probe", notJudged)
	rep, _, err := newScanner(t).Judge(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range rep.Coverage.NotJudged {
		got = append(got, n.Collector+": "+n.What)
	}
	if !slices.Equal(got, []string{"tls_probe: " + notJudged[0], "tls_probe: " + notJudged[1]}) {
		t.Errorf("coverage not judged %q", got)
	}
	if !slices.ContainsFunc(rep.Coverage.Gaps, func(g reports.Gap) bool {
		return g.ID == "GH-TLS-004" && g.Status == reports.StatusError && strings.Contains(g.Reason, "0.0.0.0:8443 could not be reached")
	}) {
		t.Errorf("gaps %+v, want GH-TLS-004 an error naming 0.0.0.0:8443", rep.Coverage.Gaps)
	}
	for _, r := range rep.Results {
		if r.ID == "GH-TLS-007" && (r.Status != reports.StatusError || !slices.Contains(r.Messages,
			"loopback-only 127.0.0.1:7000 could not be reached, so its verdict is unknown: filtered: the TCP connect got no answer within 2s")) {
			t.Errorf("GH-TLS-007 %s %q, want an error naming the filtered loopback listener", r.Status, r.Messages)
		}
	}
}

func TestWaiverLeavesPassesAlone(t *testing.T) {
	doc, data := loadDoc(t)
	// A waiver only ever turns a failure into waived: a passing check
	// stays a pass, with no waiver attached.
	list, err := waivers.Parse([]byte("- id: GH-SSH-001\n  target: \"*\"\n  justification: j\n  approved_by: a\n  expires: 2099-01-01\n  ticket: SEC-1\n"), "w")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := newScanner(t, WithWaivers(list), WithClock(func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) })).Document(context.Background(), doc, data)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.ID == "GH-SSH-001" && (r.Status != reports.StatusPass || r.Waiver != nil) {
			t.Errorf("a passing check was touched by a waiver: %+v", r)
		}
	}
}

func TestExitCode(t *testing.T) {
	fail := func(sev string) reports.Result { return reports.Result{Severity: sev, Status: reports.StatusFail} }
	rep := func(rs ...reports.Result) *reports.Report { return &reports.Report{Results: rs} }
	cases := []struct {
		name   string
		reps   []*reports.Report
		failOn string
		want   int
	}{
		{"clean", []*reports.Report{rep(reports.Result{Severity: "high", Status: reports.StatusPass})}, "high", ExitPass},
		{"medium under high", []*reports.Report{rep(fail("medium"))}, "high", ExitPass},
		{"medium at medium", []*reports.Report{rep(fail("medium"))}, "medium", ExitFail},
		{"critical", []*reports.Report{rep(fail("critical"))}, "high", ExitFail},
		{"waived", []*reports.Report{rep(reports.Result{Severity: "critical", Status: reports.StatusWaived})}, "info", ExitPass},
		{"error beats fail", []*reports.Report{rep(fail("critical")), rep(reports.Result{Severity: "info", Status: reports.StatusError})}, "critical", ExitUntrusted},
		{"collector error", []*reports.Report{{Collectors: map[string]reports.CollectorStatus{"ssh": {Status: "error"}}}}, "high", ExitUntrusted},
	}
	for _, c := range cases {
		if got := ExitCode(c.reps, Thresholds{FailOn: c.failOn}); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
	skip := func(sev string, outOfScope bool) *reports.Report {
		return rep(reports.Result{Severity: sev, Status: reports.StatusSkip, OutOfScope: outOfScope})
	}
	for _, c := range []struct {
		name       string
		rep        *reports.Report
		failOnSkip string
		want       int
	}{
		{"skips count for nothing by default", skip("critical", false), "", ExitPass},
		{"critical skip at critical", skip("critical", false), "critical", ExitFail},
		{"high skip under critical", skip("high", false), "critical", ExitPass},
		{"high skip at high", skip("high", false), "high", ExitFail},
		{"out of scope is no gap", skip("critical", true), "critical", ExitPass},
	} {
		if got := ExitCode([]*reports.Report{c.rep}, Thresholds{FailOn: "high", FailOnSkip: c.failOnSkip}); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}

// TestMemoMatchesEvaluationOnThePack runs the default pack over a mixed
// fleet twice, with and without the engine's memo, in an order where hosts
// of one shape follow hosts of another: every report must be the same.
func TestMemoMatchesEvaluationOnThePack(t *testing.T) {
	cold, err := Pack{}.Engine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Pack{}.Engine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	warm := fleet.New(plain, fleet.DefaultEntries)
	files := []string{"testdata/hardened-facts.json", "testdata/weak-facts.json",
		"testdata/compliant-host.json", "testdata/noncompliant-image.json"}
	var hosts [][]byte
	for round := range 2 {
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			hosts = append(hosts, data)
			// The same host with its identity changed reads alike to
			// every check but gets its own report header.
			hosts = append(hosts, []byte(strings.Replace(string(data), `"target":{`, fmt.Sprintf(`"target":{"hostname":"h%d",`, round), 1)))
		}
	}
	for i, data := range hosts {
		decoded, err := facts.DecodeJSON(data)
		if err != nil {
			// The policy fixtures need not carry every collector field the
			// schema wants; parse those without it.
			doc, perr := engine.ParseDocument(data, "fixture")
			if perr != nil {
				t.Fatalf("document %d: %v / %v", i, err, perr)
			}
			compare(t, i, cold, warm, doc, doc)
			continue
		}
		a, _ := engine.DocumentFromValue(decoded, "fleet")
		b, _ := engine.DocumentFromValue(decoded, "fleet")
		compare(t, i, cold, warm, a, b)
	}
}

func compare(t *testing.T, i int, cold, warm Evaluator, a, b *engine.Document) {
	t.Helper()
	want, err := cold.Evaluate(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	got, err := warm.Evaluate(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		for j := range want {
			if !reflect.DeepEqual(got[j], want[j]) {
				t.Errorf("document %d, %s: memo %s %q, evaluation %s %q", i, want[j].ID, got[j].Status, got[j].Messages, want[j].Status, want[j].Messages)
			}
		}
	}
}

// TestUnknownParamsAreRefused: a params key no check reads is a typo that
// would silently disable what it meant to configure; it is refused, named,
// with the nearest key the pack reads.
func TestUnknownParamsAreRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "params.yaml")
	if err := os.WriteFile(path, []byte("pinz:\n  libnvidia-ml1: 535.261.03-1\nallowed_ports: [22]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Pack{Params: path}.Engine(context.Background())
	if err == nil || !strings.Contains(err.Error(), `no check reads "pinz" (did you mean "pins"?)`) {
		t.Fatalf("err = %v", err)
	}
	if err := os.WriteFile(path, []byte("pins:\n  libnvidia-ml1: 535.261.03-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (Pack{Params: path}).Engine(context.Background()); err != nil {
		t.Fatalf("known keys refused: %v", err)
	}
}
