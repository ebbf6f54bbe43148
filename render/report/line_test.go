package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/reports"
)

// wantLine is what a LineEncoder must write for rep: the json renderer's
// document with its indentation taken out, and a newline.
func wantLine(t testing.TB, rep *reports.Report) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, rendered(t, mustLookup(t, "json"), rep)); err != nil {
		t.Fatal(err)
	}
	return append(out.Bytes(), '\n')
}

func appendLine(t testing.TB, e *LineEncoder, rep *reports.Report) []byte {
	t.Helper()
	got, err := e.Append(nil, rep)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestLineEncoderMatchesJSONRenderer(t *testing.T) {
	rep := loadReport(t)
	want := wantLine(t, rep)
	e := NewLineEncoder()
	// The first line fills the cache; the second is written from it.
	for pass := range 2 {
		if got := appendLine(t, e, rep); !bytes.Equal(got, want) {
			t.Fatalf("pass %d:\n got %s\nwant %s", pass, got, want)
		}
	}
	if n := len(e.checks); n != len(rep.Results) {
		t.Errorf("cached %d checks, want one per result (%d)", n, len(rep.Results))
	}
}

// A fleet line keeps what a report says about itself beyond its results:
// the compliance profile's verdicts, its caveats and how it was judged.
func TestLineEncoderKeepsComplianceCaveatsAndJudgement(t *testing.T) {
	rep := loadReport(t)
	rep.Compliance = &reports.Compliance{Profile: "cis-ubuntu-22.04-l1-server", Title: "CIS <Ubuntu> & 22.04", Benchmark: "CIS", Version: "2.0.0"}
	rep.Judged = &reports.Judged{FailOn: "high", Checks: []string{"ssh", "GH-TLS-*"}, Verdict: reports.VerdictFail}
	rep.Caveats = []string{"demo vulnerability DB: not for release gating", "<another> & \"one\""}
	if got, want := appendLine(t, NewLineEncoder(), rep), wantLine(t, rep); !bytes.Equal(got, want) {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

// A result whose check text changed since it was cached (new controls, a
// retitled check in another pack) must not be written with the old text.
func TestLineEncoderNeverReusesStaleCheckText(t *testing.T) {
	e := NewLineEncoder()
	base := reports.Result{ID: "GH-X-001", Title: "t", Severity: "high", Status: reports.StatusFail,
		Messages: []string{"m"}, Controls: map[string][]string{"nist-800-53": {"SC-8"}}}
	variants := []func(*reports.Result){
		func(*reports.Result) {},
		func(r *reports.Result) { r.Controls = map[string][]string{"nist-800-53": {"SC-13"}} },
		func(r *reports.Result) { r.Controls = nil },
		func(r *reports.Result) { r.Title = "retitled" },
		func(r *reports.Result) { r.Messages = nil; r.Status = reports.StatusPass },
		func(r *reports.Result) {
			r.Status = reports.StatusWaived
			r.Waiver = &reports.Waiver{Justification: "j", ApprovedBy: "a", Expires: "2030-01-01", Target: "GH-X-001", Ticket: "SEC-1"}
		},
	}
	for i, vary := range variants {
		r := base
		vary(&r)
		rep := &reports.Report{Schema: reports.Schema, Results: []reports.Result{r}}
		rep.Summarize()
		if got, want := appendLine(t, e, rep), wantLine(t, rep); !bytes.Equal(got, want) {
			t.Errorf("variant %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// Check text with control characters, JSON-looking fragments or characters
// the encoder escapes is written as the renderer writes it.
func TestLineEncoderOddCheckText(t *testing.T) {
	for _, title := range []string{"\x00status\x00", `"status":"fail"`, "\u2028 <b> & \xff", `back\slash`} {
		rep := &reports.Report{Schema: reports.Schema, Results: []reports.Result{{ID: "GH-X-1", Title: title, Severity: "low", Status: reports.StatusFail,
			Controls: map[string][]string{title: {title}}}}}
		if got, want := appendLine(t, NewLineEncoder(), rep), wantLine(t, rep); !bytes.Equal(got, want) {
			t.Errorf("title %q:\n got %s\nwant %s", title, got, want)
		}
	}
}

func TestLineEncoderNilResults(t *testing.T) {
	rep := &reports.Report{Schema: reports.Schema}
	if got, want := appendLine(t, NewLineEncoder(), rep), wantLine(t, rep); !bytes.Equal(got, want) {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// FuzzLineEncoder checks the encoder against the json renderer for text from
// anywhere: messages and waivers quote scanned files and policy authors.
func FuzzLineEncoder(f *testing.F) {
	f.Add("GH-TLS-001", "title", "fail", "/etc/ssl/openssl.cnf:12: MinProtocol", "fix <it> & go", "alice")
	f.Add("GH-X-1", "\u2028line\u2029", "waived", "a|b\nc\t\"q\"\\", "\x00", "bob")
	f.Add("", "", "", "", "", "")
	f.Add("ID", "\xff\xfe", "pass", "\x7f\x1b[0m", "é", "\u202e")
	// Skipped and errored high checks are the coverage's gaps, which carry
	// the check's title and the messages as the reason.
	f.Add("GH-GAP-1", "<b>\u2028", "skip", "no facts\x00\"", "", "carol")
	f.Add("GH-GAP-2", "t", "error", "\xc3(", "r", "")
	f.Fuzz(func(t *testing.T, id, title, status, msg, remediation, approver string) {
		res := reports.Result{ID: id, Title: title, Description: msg, Severity: "high", Status: status,
			Messages: []string{msg, title}, Remediation: remediation,
			Controls: map[string][]string{title: {msg}, "nist": nil}, Package: id, File: approver}
		waived := res
		waived.Waiver = &reports.Waiver{Justification: msg, ApprovedBy: approver, Expires: title, Target: id,
			Scope: &reports.WaiverScope{Hosts: []string{approver}}}
		rep := &reports.Report{Schema: reports.Schema, Target: reports.Target{Kind: "rootfs", Ref: msg, Hostname: approver},
			Results: []reports.Result{res, waived, res}, ToolVersion: title, FactsDigest: id,
			Collectors: map[string]reports.CollectorStatus{id: {Status: status, Reason: msg}}}
		rep.Summarize()
		e := NewLineEncoder()
		want := wantLine(t, rep)
		for pass := range 2 {
			got := appendLine(t, e, rep)
			if !bytes.Equal(got, want) {
				t.Fatalf("pass %d:\n got %q\nwant %q", pass, got, want)
			}
			if strings.Count(string(got), "\n") != 1 {
				t.Fatalf("line holds a raw newline: %q", got)
			}
		}
	})
}

// fleetHostReport is one host's report from the bench fleet
// (go run ./internal/bench -write-fleet): fifty-odd results with the pack's
// full text, which is what a fleet scan encodes ten thousand times.
func fleetHostReport(t testing.TB) *reports.Report {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "fleet-host.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep reports.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

func TestLineEncoderFleetHost(t *testing.T) {
	rep := fleetHostReport(t)
	e := NewLineEncoder()
	want := wantLine(t, rep)
	for pass := range 2 {
		if got := appendLine(t, e, rep); !bytes.Equal(got, want) {
			t.Fatalf("pass %d:\n got %s\nwant %s", pass, got, want)
		}
	}
}

func BenchmarkLineEncoder(b *testing.B) {
	rep := fleetHostReport(b)
	e := NewLineEncoder()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = e.Append(buf[:0], rep); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONMarshalLine(b *testing.B) {
	rep := fleetHostReport(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(rep); err != nil {
			b.Fatal(err)
		}
	}
}
