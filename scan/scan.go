// Package scan is the pipeline every entry point shares: facts in, policy
// evaluation, waivers, and a gpuhost.report/v1 out. The CLI, the Packer gate
// and the agent call it; nothing else evaluates policy.
package scan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/internal/version"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan/waivers"
)

// Exit codes, as DESIGN.md fixes them.
const (
	ExitPass      = 0
	ExitFail      = 1
	ExitUntrusted = 2
)

// Scanner evaluates facts documents. It is safe for concurrent use.
type Scanner struct {
	eval    Evaluator
	waivers []waivers.Waiver
	now     func() time.Time
	// selected, when set, says which checks the report holds
	// (WithSelection).
	selected func(id string) bool
	// profile, when set, is judged on every report (WithCompliance).
	profile Profile
	// judged, when set, is recorded in every report with its verdict
	// (WithJudgement).
	judged *reports.Judged
}

// WithJudgement records in every report the thresholds its verdict
// follows and the patterns that chose its checks, with the verdict they
// give it; it changes no result.
func WithJudgement(t Thresholds, checks, skipChecks []string) Option {
	return func(s *Scanner) {
		s.judged = &reports.Judged{FailOn: t.FailOn, FailOnSkip: t.FailOnSkip, Checks: checks, SkipChecks: skipChecks}
	}
}

// Profile is a compliance profile: it turns a report's results into its
// controls' verdicts (policy/compliance.Profile).
type Profile interface {
	Judge(results []reports.Result) *reports.Compliance
}

// WithCompliance adds the profile's per-control verdicts to every report.
// The results and the exit code are the checks' as ever: a profile says
// what they mean for a benchmark's controls.
func WithCompliance(p Profile) Option { return func(s *Scanner) { s.profile = p } }

// Option configures a Scanner.
type Option func(*Scanner)

// WithWaivers applies waivers to every report.
func WithWaivers(w []waivers.Waiver) Option { return func(s *Scanner) { s.waivers = w } }

// WithClock replaces time.Now, for waiver expiry in tests.
func WithClock(now func() time.Time) Option { return func(s *Scanner) { s.now = now } }

// New returns a Scanner that evaluates with e: a compiled *engine.Engine,
// or a wrapper of one.
func New(e Evaluator, opts ...Option) *Scanner {
	s := &Scanner{eval: e, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Facts evaluates freshly collected facts.
func (s *Scanner) Facts(ctx context.Context, f *facts.Facts) (*reports.Report, error) {
	rep, _, err := s.Judge(ctx, f)
	return rep, err
}

// Judge evaluates freshly collected facts and also returns the JSON
// document it judged, whose digest the report carries: a caller that keeps
// the facts beside the report (the gpuhost-scan provisioner) keeps exactly
// those bytes.
func (s *Scanner) Judge(ctx context.Context, f *facts.Facts) (*reports.Report, []byte, error) {
	doc, data, err := engine.NewDocument(f)
	if err != nil {
		return nil, nil, err
	}
	rep, err := s.Document(ctx, doc, data)
	return rep, data, err
}

// Document evaluates a parsed document; raw is its JSON, for the digest.
func (s *Scanner) Document(ctx context.Context, doc *engine.Document, raw []byte) (*reports.Report, error) {
	results, err := s.eval.Evaluate(ctx, doc)
	if err != nil {
		return nil, fmt.Errorf("evaluating policies: %w", err)
	}
	if s.selected != nil {
		results = slices.DeleteFunc(results, func(r reports.Result) bool { return !s.selected(r.ID) })
	}
	target := targetOf(doc)
	waivers.ApplyTarget(results, s.waivers, target, s.now())
	sum := sha256.Sum256(raw)
	rep := &reports.Report{
		Schema:       reports.Schema,
		Target:       target,
		Results:      results,
		FactsDigest:  "sha256:" + hex.EncodeToString(sum[:]),
		PolicyDigest: s.eval.Digest(),
		ToolVersion:  version.String(),
		Collectors:   map[string]reports.CollectorStatus{},
	}
	for name, st := range doc.Collectors {
		rep.Collectors[name] = reports.CollectorStatus{Status: st.Status, Reason: st.Reason}
	}
	rep.Caveats = doc.Caveats
	for _, n := range doc.NotJudged {
		rep.Coverage.NotJudged = append(rep.Coverage.NotJudged, reports.NotJudged{Collector: n.Collector, What: n.What})
	}
	rep.Summarize()
	if s.profile != nil {
		rep.Compliance = s.profile.Judge(rep.Results)
	}
	if s.judged != nil {
		j := *s.judged
		switch ExitCode([]*reports.Report{rep}, Thresholds{FailOn: j.FailOn, FailOnSkip: j.FailOnSkip}) {
		case ExitPass:
			j.Verdict = reports.VerdictPass
		case ExitFail:
			j.Verdict = reports.VerdictFail
		default:
			j.Verdict = reports.VerdictUntrusted
		}
		rep.Judged = &j
	}
	return rep, nil
}

func targetOf(doc *engine.Document) reports.Target {
	t := reports.Target{Kind: doc.Kind}
	t.Ref, _ = doc.TargetString("ref")
	t.ScannedAt, _ = doc.TargetString("scanned_at")
	t.Hostname, _ = doc.TargetString("hostname")
	return t
}

// Thresholds decide a scan's exit code. FailOn is the lowest severity at
// which a failing check fails the scan; FailOnSkip, when set, is the lowest
// at which an applicable check that reached no verdict (skipped, or errored)
// fails it too, so a gate cannot pass on checks that never ran.
type Thresholds struct {
	FailOn     string
	FailOnSkip string
}

// Blocks reports whether one result stops a gate: an error (never a pass),
// a failure at or above FailOn, or, with FailOnSkip set, an applicable check
// at or above it that reached no verdict.
func (t Thresholds) Blocks(r reports.Result) bool {
	return r.Status == reports.StatusError || r.FailsAt(t.FailOn) ||
		(t.FailOnSkip != "" && r.UnevaluatedAt(t.FailOnSkip))
}

// ExitCode folds reports into one exit code: 2 when any scan could not be
// trusted (a check errored, or a collector failed on bad input), else 1 when
// any check fails at or above t.FailOn or goes unevaluated at or above
// t.FailOnSkip, else 0.
func ExitCode(reps []*reports.Report, t Thresholds) int {
	code := ExitPass
	for _, r := range reps {
		if Untrusted(r) {
			return ExitUntrusted
		}
		if r.Failed(t.FailOn) || (t.FailOnSkip != "" && r.NotEvaluated(t.FailOnSkip)) {
			code = ExitFail
		}
	}
	return code
}

// Untrusted reports whether a report rests on facts that could not be read:
// a check errored, or a collector failed.
func Untrusted(r *reports.Report) bool {
	if r.Errored() {
		return true
	}
	for _, c := range r.Collectors {
		if c.Status == facts.StatusError {
			return true
		}
	}
	return false
}
