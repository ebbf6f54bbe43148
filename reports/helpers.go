package reports

import (
	"fmt"
	"sort"
	"strings"
)

// Domain is the policy domain of a result: the middle of its Rego package
// (gpuhost.<domain>.<name>) or, failing that, the second part of its id
// (GH-<DOMAIN>-001), lower-cased. Reports group and class results by it.
func (r Result) Domain() string {
	if rest, ok := strings.CutPrefix(r.Package, "gpuhost."); ok {
		if d, _, ok := strings.Cut(rest, "."); ok && d != "" {
			return d
		}
	}
	parts := strings.Split(r.ID, "-")
	if len(parts) >= 3 && parts[1] != "" {
		return strings.ToLower(parts[1])
	}
	return "other"
}

// tally counts results by status and failures by severity without touching
// the report: renderers only read, and a caller that forgot Summarize still
// gets true counts.
func tally(rep *Report) Summary {
	s := Summary{ByStatus: map[string]int{}, BySeverity: map[string]int{}}
	for _, st := range Statuses {
		s.ByStatus[st] = 0
	}
	for _, sev := range Severities {
		s.BySeverity[sev] = 0
	}
	for _, res := range rep.Results {
		s.Total++
		s.ByStatus[res.Status]++
		if res.Status == StatusFail {
			s.BySeverity[res.Severity]++
		}
	}
	return s
}

// firstMessage is the one line a compact format shows for a result.
func firstMessage(res Result) string {
	if len(res.Messages) == 0 {
		return ""
	}
	return res.Messages[0]
}

// controlTags flattens controls into sorted "framework/id" tags, the form
// SARIF and the HTML report use.
func controlTags(controls map[string][]string) []string {
	var out []string
	for fw, ids := range controls {
		for _, id := range ids {
			out = append(out, fw+"/"+id)
		}
	}
	sort.Strings(out)
	return out
}

// sortedFrameworks returns the control frameworks in a stable order.
func sortedFrameworks(controls map[string][]string) []string {
	out := make([]string, 0, len(controls))
	for fw := range controls {
		out = append(out, fw)
	}
	sort.Strings(out)
	return out
}

// truncate shortens s to at most n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	return string(r[:n-1]) + "…"
}

// sarifSeverityScores is GitHub's security-severity per severity.
var sarifSeverityScores = map[string]string{
	"critical": "9.5",
	"high":     "8.0",
	"medium":   "5.5",
	"low":      "3.0",
	"info":     "0.0",
}

// waiverLine is how one-line formats describe the waiver of a waived
// result: who approved it, until when, the ticket, the scope, then why
// (last, as the part a narrow column may cut).
func waiverLine(w *Waiver) string {
	if w == nil {
		return "waived"
	}
	return "waived by " + w.ApprovedBy + " until " + w.Expires + waiverRefs(w) + ": " + w.Justification
}

// expiredWaiverLine notes, on a failure, the waiver that lapsed.
func expiredWaiverLine(w *Waiver) string {
	return "waiver by " + w.ApprovedBy + " expired " + w.Expires + waiverRefs(w)
}

// waiverRefs is the ticket and scope of a waiver as a ", ticket T, scope S"
// suffix; empty parts are left out.
func waiverRefs(w *Waiver) string {
	var b strings.Builder
	if w.Ticket != "" {
		b.WriteString(", ticket " + w.Ticket)
	}
	if s := waiverScopeText(w.Scope); s != "" {
		b.WriteString(", scope " + s)
	}
	return b.String()
}

// waiverScopeText is String, empty for no scope.
func waiverScopeText(s *WaiverScope) string {
	if s == nil {
		return ""
	}
	return s.String()
}

// String is a waiver scope in words, e.g. "kinds image, host; hosts gpu-*".
func (s WaiverScope) String() string {
	var parts []string
	if len(s.Kinds) > 0 {
		parts = append(parts, "kinds "+strings.Join(s.Kinds, ", "))
	}
	if len(s.Hosts) > 0 {
		parts = append(parts, "hosts "+strings.Join(s.Hosts, ", "))
	}
	return strings.Join(parts, "; ")
}

// byStatus returns the results with the given status, in report order.
func byStatus(rep *Report, status string) []Result {
	var out []Result
	for _, r := range rep.Results {
		if r.Status == status {
			out = append(out, r)
		}
	}
	return out
}

// coverageLine is coverage in one sentence, the same words in every format.
func coverageLine(c Coverage) string {
	line := fmt.Sprintf("Coverage: %d of %d applicable checks evaluated", c.Evaluated, c.Checks)
	var missed []string
	for _, sev := range Severities {
		if n := c.NotEvaluated[sev]; n > 0 {
			missed = append(missed, fmt.Sprintf("%d %s", n, sev))
		}
	}
	if len(missed) > 0 {
		line += "; not evaluated: " + strings.Join(missed, ", ")
	}
	return line
}

// gapLine names one important check that reached no verdict, and why.
func gapLine(g Gap) string {
	return fmt.Sprintf("%s (%s) %s: %s", g.ID, g.Severity, g.Status, g.Reason)
}

// criticalGaps counts the critical checks that reached no verdict: a
// headline must not call a report clean while any did.
func criticalGaps(c Coverage) int {
	n := 0
	for _, g := range c.Gaps {
		if g.Severity == "critical" {
			n++
		}
	}
	return n
}
