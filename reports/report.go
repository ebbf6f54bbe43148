// Package reports holds gpuhost.report/v1, the model every scan produces:
// results, summary and coverage, and the rules that read them (what fails,
// what was not evaluated). Renderers only read it; they live in
// render/report, one file per format.
package reports

import (
	"cmp"
	"slices"
	"strings"
)

// Schema is the value of Report.Schema. Its JSON Schema, generated from
// the types below, is schema.json beside this file.
//
//go:generate go run ./internal/schemagen -o schema.json
const Schema = "gpuhost.report/v1"

// Result statuses.
const (
	StatusPass   = "pass"
	StatusFail   = "fail"
	StatusSkip   = "skip"
	StatusWaived = "waived"
	StatusError  = "error"
)

// Statuses lists result statuses in the order reports show them.
var Statuses = []string{StatusFail, StatusError, StatusWaived, StatusSkip, StatusPass}

// Severities lists severities from most to least severe.
var Severities = []string{"critical", "high", "medium", "low", "info"}

// SeverityRank orders severities: critical is 0, info is 4, anything unknown
// sorts after info.
func SeverityRank(s string) int {
	for i, v := range Severities {
		if v == s {
			return i
		}
	}
	return len(Severities)
}

// ValidSeverity reports whether s is one of Severities.
func ValidSeverity(s string) bool { return SeverityRank(s) < len(Severities) }

// Report is one scan of one target.
type Report struct {
	Schema       string   `json:"schema" jsonschema:"enum=gpuhost.report/v1"`
	Target       Target   `json:"target"`
	Summary      Summary  `json:"summary"`
	Coverage     Coverage `json:"coverage"`
	Results      []Result `json:"results"`
	FactsDigest  string   `json:"facts_digest"`
	PolicyDigest string   `json:"policy_digest"`
	ToolVersion  string   `json:"tool_version"`
	// Collectors carries each collector's status so a reader can see why
	// checks skipped or errored.
	Collectors map[string]CollectorStatus `json:"collectors,omitempty"`
	// Compliance is the compliance profile the scan was asked to judge
	// (--compliance), per control.
	Compliance *Compliance `json:"compliance,omitempty"`
	// Caveats qualify the verdict whatever the checks say (a demo
	// vulnerability DB): every format shows them in its header.
	Caveats []string `json:"caveats,omitempty"`
	// Judged is how the report was judged, where the scanner was told:
	// the thresholds its verdict follows and the checks chosen, so that a
	// saved report says what its pass meant.
	Judged *Judged `json:"judged,omitempty"`
}

// Judged records the settings a report was judged with and the verdict
// they give it.
type Judged struct {
	// FailOn is the lowest severity whose failure fails the scan, or
	// "none".
	FailOn string `json:"fail_on" jsonschema:"enum=critical,enum=high,enum=medium,enum=low,enum=info,enum=none"`
	// FailOnSkip, when set, is the lowest severity at which a check that
	// applies but reached no verdict fails the scan.
	FailOnSkip string `json:"fail_on_skip,omitempty" jsonschema:"enum=critical,enum=high,enum=medium,enum=low,enum=info"`
	// Checks and SkipChecks are the patterns that chose the checks
	// reported; none means every check of the pack.
	Checks     []string `json:"checks,omitempty"`
	SkipChecks []string `json:"skip_checks,omitempty"`
	// Verdict is what the thresholds make of the results: pass, fail, or
	// untrusted (a check errored or a collector failed on bad input).
	Verdict string `json:"verdict" jsonschema:"enum=pass,enum=fail,enum=untrusted"`
}

// Verdicts of a judged report.
const (
	VerdictPass      = "pass"
	VerdictFail      = "fail"
	VerdictUntrusted = "untrusted"
)

// Target mirrors facts.Target: what was scanned, and when.
type Target struct {
	Kind      string `json:"kind" jsonschema:"enum=rootfs,enum=image,enum=host,enum=facts,enum=oci"`
	Ref       string `json:"ref"`
	ScannedAt string `json:"scanned_at"`
	Hostname  string `json:"hostname,omitempty"`
}

// CollectorStatus mirrors facts.CollectorStatus.
type CollectorStatus struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Result is one check's outcome.
type Result struct {
	ID          string              `json:"id"`
	Title       string              `json:"title"`
	Description string              `json:"description,omitempty"`
	Severity    string              `json:"severity" jsonschema:"enum=critical,enum=high,enum=medium,enum=low,enum=info"`
	Status      string              `json:"status" jsonschema:"enum=pass,enum=fail,enum=skip,enum=waived,enum=error"`
	Messages    []string            `json:"messages"`
	Remediation string              `json:"remediation,omitempty"`
	Controls    map[string][]string `json:"controls,omitempty"`
	Waiver      *Waiver             `json:"waiver,omitempty"`
	// Package is the Rego package that implements the check.
	Package string `json:"package,omitempty"`
	// File is the policy file, relative to the policy root.
	File string `json:"file,omitempty"`
	// Location is the file in the target that carries the fix, where a
	// message names none of its own (the check's custom.location).
	Location string `json:"location,omitempty"`
	// OutOfScope marks a skip because the check does not apply to this
	// target: a live probe on an image, or an sshd check where no sshd is
	// installed or running. That is no gap in coverage.
	OutOfScope bool `json:"out_of_scope,omitempty"`
	// Findings repeat the messages of a failed or errored check with what
	// the policy said each is about, where it said anything: the file and
	// line, or the port or GPU. Absent when no message says more than its
	// text.
	Findings []Finding `json:"findings,omitempty"`
	// Related are places outside the target that bear on the result: the
	// block of the Packer template that configures what the check judges,
	// when the gate scanned a build.
	Related []Related `json:"related,omitempty"`
}

// Related is a place in a file outside the target, such as the template a
// build was made from, and what it has to do with the result.
type Related struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Message string `json:"message"`
}

// Finding is one deny (or error) message and its subject. A policy gives
// them as objects, {"msg": ..., "file": ..., "line": ..., "subject": ...},
// where a plain message is a string.
type Finding struct {
	Message string `json:"message"`
	// File is the path inside the target the finding is in; Line its line
	// there, from 1, when the collector knew it.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Subject names what the finding is about when that is not a file: a
	// port ("tcp/8080"), a GPU's UUID, a package, a CVE id.
	Subject string `json:"subject,omitempty"`
	// Waiver is the waiver of this finding alone: a CVE waiver of the CVE
	// check. An expired one says so and leaves the finding failing.
	Waiver *Waiver `json:"waiver,omitempty"`
}

// Located reports whether the finding says more than its message.
func (f Finding) Located() bool { return f.File != "" || f.Line > 0 || f.Subject != "" }

// Waiver is the waiver that applied to a result, or that would have applied
// had it not expired (then Expired is true and the result is not waived).
type Waiver struct {
	Justification string `json:"justification"`
	ApprovedBy    string `json:"approved_by"`
	Expires       string `json:"expires"`
	Target        string `json:"target"`
	Expired       bool   `json:"expired,omitempty"`
	Ticket        string `json:"ticket,omitempty"`
	// Scope is the waiver's scope, when it has one.
	Scope *WaiverScope `json:"scope,omitempty"`
	// CVE lists the vulnerabilities a waiver of the CVE check covers.
	CVE []string `json:"cve,omitempty"`
}

// WaiverScope narrows a waiver to target kinds and hostname globs.
type WaiverScope struct {
	Kinds []string `json:"kinds,omitempty"`
	Hosts []string `json:"hosts,omitempty"`
}

// Summary counts results by status, and failures by severity.
type Summary struct {
	Total      int            `json:"total"`
	ByStatus   map[string]int `json:"by_status"`
	BySeverity map[string]int `json:"failed_by_severity"`
	// NotApplicable is how many of the skipped checks do not apply to the
	// target (out_of_scope); the rest of by_status.skip could not run,
	// which means the opposite to a reviewer. Absent when none is, as in
	// the reports of versions before it was counted.
	NotApplicable int `json:"skipped_not_applicable,omitempty"`
}

// CouldNotRun is how many skipped checks apply to the target and reached
// no verdict.
func (s Summary) CouldNotRun() int { return s.ByStatus[StatusSkip] - s.NotApplicable }

// Coverage says how much of the pack could judge the target. A report
// whose critical checks did not run proves little however few checks fail,
// so every format shows this before any result.
type Coverage struct {
	// Checks is how many checks apply to the target's kind; Evaluated is
	// how many of them reached a verdict (pass, fail or waived).
	Checks    int `json:"checks"`
	Evaluated int `json:"evaluated"`
	// NotEvaluated counts, by severity, the applicable checks that were
	// skipped or errored.
	NotEvaluated map[string]int `json:"not_evaluated_by_severity"`
	// Gaps are the critical and high checks that were skipped or errored,
	// with why.
	Gaps []Gap `json:"gaps"`
	// NotJudged is what the collectors found and no check judged, each
	// with why (a listener that speaks no TLS, a UDP port the TLS probe
	// does not try), copied from the facts by whoever builds the report.
	NotJudged []NotJudged `json:"not_judged,omitempty"`
}

// NotJudged is one thing a collector found and left unjudged; it mirrors
// facts.NotJudged.
type NotJudged struct {
	Collector string `json:"collector"`
	What      string `json:"what"`
}

// Gap is one important check that reached no verdict.
type Gap struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Severity string `json:"severity" jsonschema:"enum=critical,enum=high,enum=medium,enum=low,enum=info"`
	Status   string `json:"status" jsonschema:"enum=skip,enum=error"`
	Reason   string `json:"reason"`
}

// GapSeverity is the lowest severity whose unevaluated checks are listed.
const GapSeverity = "high"

// Summarize fills r.Summary and r.Coverage from r.Results and sorts the
// results: failures first, then by severity, then by id, so every format
// lists them alike.
func (r *Report) Summarize() {
	sortResults(r.Results)
	r.Summary = Tally(r)
	r.Coverage = CoverageOf(r)
}

// CoverageOf works the coverage out from the results, which it expects
// sorted, so that renderers given a report nobody summarized still show it.
// What was not judged comes from the facts, not the results, and is kept
// as the report carries it.
func CoverageOf(r *Report) Coverage {
	c := Coverage{NotEvaluated: map[string]int{}, Gaps: []Gap{}, NotJudged: r.Coverage.NotJudged}
	for _, sev := range Severities {
		c.NotEvaluated[sev] = 0
	}
	for _, res := range r.Results {
		if res.OutOfScope {
			continue
		}
		c.Checks++
		switch {
		case res.Unevaluated():
			c.NotEvaluated[res.Severity]++
			if SeverityRank(res.Severity) <= SeverityRank(GapSeverity) {
				c.Gaps = append(c.Gaps, Gap{ID: res.ID, Title: res.Title, Severity: res.Severity, Status: res.Status, Reason: strings.Join(res.Messages, "; ")})
			}
		default:
			c.Evaluated++
		}
	}
	slices.SortStableFunc(c.Gaps, func(a, b Gap) int {
		return cmp.Or(cmp.Compare(SeverityRank(a.Severity), SeverityRank(b.Severity)), strings.Compare(a.ID, b.ID))
	})
	return c
}

// Unevaluated reports whether the check applies to the target but reached
// no verdict: it was skipped or errored.
func (r Result) Unevaluated() bool {
	return !r.OutOfScope && (r.Status == StatusSkip || r.Status == StatusError)
}

// NotEvaluated reports whether an applicable check at or above threshold
// was skipped or errored: the test behind --fail-on-skip.
func (r *Report) NotEvaluated(threshold string) bool {
	return slices.ContainsFunc(r.Results, func(res Result) bool { return res.UnevaluatedAt(threshold) })
}

// FailsAt reports whether the result is a failure at or above threshold.
// It is the one place the rule behind --fail-on, the gate's fail_on and
// verify is written.
func (r Result) FailsAt(threshold string) bool {
	return threshold != Never && r.Status == StatusFail && SeverityRank(r.Severity) <= SeverityRank(threshold)
}

// Never is the threshold no failure reaches (--fail-on none): an advisory
// scan, which still exits 2 when the scan itself cannot be trusted, as no
// `|| true` after a scan would.
const Never = "none"

// UnevaluatedAt reports whether the result applies to the target, reached no
// verdict, and is at or above threshold (--fail-on-skip, fail_on_skip).
func (r Result) UnevaluatedAt(threshold string) bool {
	return r.Unevaluated() && SeverityRank(r.Severity) <= SeverityRank(threshold)
}

// sortResults orders results by status, severity and id, keeping the input
// order of equal ones. Status and severity take a handful of values, so
// the results are dealt into their buckets in input order and only a
// bucket whose ids are out of order is sorted; each Result then moves
// once: Results are large, and a fleet scan sorts every host's.
func sortResults(results []Result) {
	severities := len(Severities) + 1 // unknown ones sort last
	counts := make([]int, (len(Statuses)+1)*severities)
	bucket := make([]int, len(results))
	for i := range results {
		bucket[i] = statusRank(results[i].Status)*severities + SeverityRank(results[i].Severity)
		counts[bucket[i]]++
	}
	starts := make([]int, len(counts)+1)
	for b, c := range counts {
		starts[b+1] = starts[b] + c
	}
	order := make([]int, len(results))
	next := slices.Clone(starts)
	for i, b := range bucket {
		order[next[b]] = i
		next[b]++
	}
	byID := func(a, b int) int { return strings.Compare(results[a].ID, results[b].ID) }
	for b := range counts {
		if in := order[starts[b]:starts[b+1]]; !slices.IsSortedFunc(in, byID) {
			slices.SortStableFunc(in, byID)
		}
	}
	moved := false
	for i, at := range order {
		moved = moved || i != at
	}
	if !moved {
		return
	}
	in := slices.Clone(results)
	for i, at := range order {
		results[i] = in[at]
	}
}

func statusRank(s string) int {
	for i, v := range Statuses {
		if v == s {
			return i
		}
	}
	return len(Statuses)
}

// Failed reports whether any result fails at or above threshold (FailsAt).
// Errors are Errored's: they make the scan untrusted, whatever their severity.
func (r *Report) Failed(threshold string) bool {
	return slices.ContainsFunc(r.Results, func(res Result) bool { return res.FailsAt(threshold) })
}

// Errored reports whether any result is an error, which makes the scan
// untrustworthy as a whole.
func (r *Report) Errored() bool {
	for _, res := range r.Results {
		if res.Status == StatusError {
			return true
		}
	}
	return false
}
