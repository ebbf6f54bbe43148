package report

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpuhost/gpuhost/reports"
)

// firstMessage is the one line a compact format shows for a result.
func firstMessage(res reports.Result) string {
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
func waiverLine(w *reports.Waiver) string {
	if w == nil {
		return "waived"
	}
	return "waived by " + w.ApprovedBy + " until " + w.Expires + waiverRefs(w) + ": " + w.Justification
}

// expiredWaiverLine notes, on a failure, the waiver that lapsed.
func expiredWaiverLine(w *reports.Waiver) string {
	return "waiver by " + w.ApprovedBy + " expired " + w.Expires + waiverRefs(w)
}

// waiverRefs is the ticket and scope of a waiver as a ", ticket T, scope S"
// suffix; empty parts are left out.
func waiverRefs(w *reports.Waiver) string {
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
func waiverScopeText(s *reports.WaiverScope) string {
	if s == nil {
		return ""
	}
	return s.String()
}

// byStatus returns the results with the given status, in report order.
func byStatus(rep *reports.Report, status string) []reports.Result {
	var out []reports.Result
	for _, r := range rep.Results {
		if r.Status == status {
			out = append(out, r)
		}
	}
	return out
}

// coverageLine is coverage in one sentence, the same words in every format.
func coverageLine(c reports.Coverage) string {
	line := fmt.Sprintf("Coverage: %d of %d applicable checks evaluated", c.Evaluated, c.Checks)
	var missed []string
	for _, sev := range reports.Severities {
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
func gapLine(g reports.Gap) string {
	return fmt.Sprintf("%s (%s) %s: %s", g.ID, g.Severity, g.Status, g.Reason)
}

// criticalGaps counts the critical checks that reached no verdict: a
// headline must not call a report clean while any did.
func criticalGaps(c reports.Coverage) int {
	n := 0
	for _, g := range c.Gaps {
		if g.Severity == "critical" {
			n++
		}
	}
	return n
}
