package compliance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/reports"
)

// rank orders statuses when a control's rules, or a rule's checks, are
// combined: the first that any part has is the whole's. A control passes
// only when every part passed or does not apply, and any part that no
// check judged leaves the whole not evaluated, never passed.
var rank = map[string]int{
	reports.ControlFail:          0,
	reports.ControlError:         1,
	reports.ControlNotEvaluated:  2,
	reports.ControlWaived:        3,
	reports.ControlPass:          4,
	reports.ControlNotApplicable: 5,
}

// verdict is one part's status, why, and what decided it.
type verdict struct {
	status, reason string
	findings       []reports.Finding
	remediation    string
}

// worse reports whether a should replace b when parts are combined.
func (v verdict) worse(than verdict) bool { return rank[v.status] < rank[than.status] }

// Judge returns the profile's verdict on the target whose results these
// are (after waivers): each control's status from the results of the
// checks its rules name.
func (p *Profile) Judge(results []reports.Result) *reports.Compliance {
	byID := make(map[string]*reports.Result, len(results))
	for i := range results {
		byID[results[i].ID] = &results[i]
	}
	tailored := map[string]Tailoring{}
	for _, t := range p.Tailoring {
		tailored[t.Control] = t
	}
	out := &reports.Compliance{
		Profile:         p.Name,
		Title:           p.Title,
		Benchmark:       p.Benchmark.Title,
		Version:         p.Benchmark.Version,
		XCCDFBenchmark:  p.XCCDF.Benchmark,
		XCCDFProfile:    p.XCCDF.Profile,
		Platform:        p.XCCDF.Platform,
		XCCDFRulePrefix: p.XCCDF.RulePrefix,
		Summary:         map[string]int{},
		Rules:           map[string]int{},
		Controls:        make([]reports.Control, 0, len(p.Controls)),
	}
	for _, c := range p.Controls {
		ctl := judgeControl(c, byID)
		if t, ok := tailored[c.ID]; ok {
			tailor(&ctl, t, byID)
		}
		for _, r := range ctl.Rules {
			out.Rules[r.Status]++
		}
		out.Summary[ctl.Status]++
		out.Controls = append(out.Controls, ctl)
	}
	out.Sections = sections(p, out.Controls)
	return out
}

func judgeControl(c Control, byID map[string]*reports.Result) reports.Control {
	ctl := reports.Control{ID: c.ID, Title: c.Title, Level: c.Level, Checks: []string{}, XCCDFRules: []string{}, Rules: []reports.RuleResult{}}
	if c.Manual != "" {
		ctl.Status, ctl.Manual = reports.ControlManual, c.Manual
		ctl.Reason = "checked by hand: " + c.Manual
		return ctl
	}
	whole := verdict{status: reports.ControlNotApplicable}
	for _, r := range c.Rules {
		ctl.XCCDFRules = append(ctl.XCCDFRules, r.XCCDF)
		v := judgeRule(r, byID)
		for _, ref := range r.Checks {
			if !slices.Contains(ctl.Checks, ref) {
				ctl.Checks = append(ctl.Checks, ref)
			}
		}
		ctl.Rules = append(ctl.Rules, reports.RuleResult{ID: r.XCCDF, Checks: r.Checks, Status: v.status, Reason: v.reason})
		if v.status == reports.ControlFail || v.status == reports.ControlError || v.status == reports.ControlWaived {
			ctl.Findings = append(ctl.Findings, v.findings...)
			if ctl.Remediation == "" {
				ctl.Remediation = v.remediation
			}
		}
		if v.worse(whole) {
			whole = v
			whole.reason = fmt.Sprintf("%s: %s", r.XCCDF, v.reason)
		}
	}
	ctl.Status = whole.status
	if whole.status != reports.ControlPass {
		ctl.Reason = whole.reason
	}
	return ctl
}

// judgeRule combines the verdicts of a rule's checks.
func judgeRule(r Rule, byID map[string]*reports.Result) verdict {
	if len(r.Checks) == 0 {
		return verdict{status: reports.ControlNotEvaluated, reason: "no gpuhost check decides this rule yet"}
	}
	return judgeRefs(r.Checks, byID)
}

func judgeRefs(refs []string, byID map[string]*reports.Result) verdict {
	var whole verdict
	var findings []reports.Finding
	for i, s := range refs {
		v := judgeRef(ParseCheckRef(s), byID)
		findings = append(findings, v.findings...)
		if i == 0 || v.worse(whole) {
			whole = v
		}
	}
	whole.findings = findings
	return whole
}

// judgeRef is one check's verdict on a rule: the check's own status, or,
// for a reference with a subject, whether any of its findings is about
// that subject.
func judgeRef(ref CheckRef, byID map[string]*reports.Result) verdict {
	r, ok := byID[ref.ID]
	if !ok {
		return verdict{status: reports.ControlNotEvaluated, reason: ref.ID + " is not in this scan (not for this kind of target, or not selected)"}
	}
	switch r.Status {
	case reports.StatusPass:
		return verdict{status: reports.ControlPass}
	case reports.StatusSkip:
		why := ref.ID + " was skipped"
		if len(r.Messages) > 0 {
			why += ": " + r.Messages[0]
		}
		if r.OutOfScope {
			return verdict{status: reports.ControlNotApplicable, reason: why}
		}
		return verdict{status: reports.ControlNotEvaluated, reason: why}
	case reports.StatusError:
		return verdict{status: reports.ControlError, reason: ref.ID + " errored: " + strings.Join(r.Messages, "; "), findings: findingsOf(r)}
	}
	status := reports.ControlFail
	if r.Status == reports.StatusWaived {
		status = reports.ControlWaived
	}
	all := findingsOf(r)
	if ref.Subject == "" {
		return verdict{status: status, reason: ref.ID + " " + r.Status + ": " + summary(all), findings: all, remediation: r.Remediation}
	}
	var about []reports.Finding
	located := false
	for _, f := range all {
		located = located || f.Located()
		if f.Subject == ref.Subject || f.File == ref.Subject {
			about = append(about, f)
		}
	}
	switch {
	case len(about) > 0:
		return verdict{status: status, reason: ref.ID + " " + r.Status + ": " + summary(about), findings: about, remediation: r.Remediation}
	case !located:
		// A failure that names no subject cannot be placed on one.
		return verdict{status: reports.ControlNotEvaluated, reason: ref.ID + " " + r.Status + " without naming what about: " + summary(all)}
	}
	return verdict{status: reports.ControlPass}
}

// findingsOf is a result's findings, or its messages as findings when it
// gave none.
func findingsOf(r *reports.Result) []reports.Finding {
	if len(r.Findings) > 0 {
		return r.Findings
	}
	out := make([]reports.Finding, 0, len(r.Messages))
	for _, m := range r.Messages {
		out = append(out, reports.Finding{Message: m})
	}
	return out
}

func summary(fs []reports.Finding) string {
	if len(fs) == 0 {
		return "no message"
	}
	s := fs[0].Message
	if len(fs) > 1 {
		s += fmt.Sprintf(" (and %d more)", len(fs)-1)
	}
	return s
}

// tailor applies a tailoring entry: the control is set aside with its
// reason unless a compensating check fails or errors, which fails it.
func tailor(ctl *reports.Control, t Tailoring, byID map[string]*reports.Result) {
	if len(t.Compensating) > 0 {
		v := judgeRefs(t.Compensating, byID)
		for _, ref := range t.Compensating {
			if !slices.Contains(ctl.Checks, ref) {
				ctl.Checks = append(ctl.Checks, ref)
			}
		}
		if v.status == reports.ControlFail || v.status == reports.ControlError {
			ctl.Status = v.status
			ctl.Reason = fmt.Sprintf("tailored (%s), but its compensating check: %s", t.Reason, v.reason)
			ctl.Findings, ctl.Remediation = v.findings, v.remediation
			return
		}
	}
	ctl.Status, ctl.Reason = reports.ControlTailored, t.Reason
	ctl.Findings, ctl.Remediation = nil, ""
}

// sections counts controls by status in each top-level section, in the
// benchmark's order.
func sections(p *Profile, controls []reports.Control) []reports.SectionSummary {
	var out []reports.SectionSummary
	index := map[string]int{}
	for _, c := range controls {
		id, _, _ := strings.Cut(c.ID, ".")
		i, ok := index[id]
		if !ok {
			i = len(out)
			index[id] = i
			out = append(out, reports.SectionSummary{ID: id, Title: p.Sections[id], ByStatus: map[string]int{}})
		}
		out[i].ByStatus[c.Status]++
	}
	slices.SortStableFunc(out, func(a, b reports.SectionSummary) int { return compareIDs(a.ID, b.ID) })
	return out
}

// compareIDs orders dotted control numbers numerically: 1.10 after 1.9.
func compareIDs(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if d := numCompare(as[i], bs[i]); d != 0 {
			return d
		}
	}
	return len(as) - len(bs)
}

func numCompare(a, b string) int {
	if len(a) != len(b) {
		if isDigits(a) && isDigits(b) {
			return len(a) - len(b)
		}
	}
	return strings.Compare(a, b)
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
