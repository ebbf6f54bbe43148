package report

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/gpuhost/gpuhost/render/escape"
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

// skippedCounts is the skips in words, split into the two kinds a reviewer
// reads oppositely: checks that do not apply, and checks that could not run.
func skippedCounts(s reports.Summary) string {
	n := s.ByStatus[reports.StatusSkip]
	if n == 0 {
		return "0 skipped"
	}
	return fmt.Sprintf("%d skipped (%d not applicable, %d could not run)", n, s.NotApplicable, s.CouldNotRun())
}

// skipKind names a skip's kind, as a reader of a skipped test case should
// take it.
func skipKind(res reports.Result) string {
	if res.OutOfScope {
		return "not applicable"
	}
	return "could not run"
}

// caveatLine is one caveat of a report, the same words in every format.
func caveatLine(c string) string { return "Caveat: " + c }

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
	if n := len(c.NotJudged); n > 0 {
		line += fmt.Sprintf("; %d found and not judged", n)
	}
	return line
}

// notJudgedLine names one thing a collector found and no check judged.
func notJudgedLine(n reports.NotJudged) string {
	return fmt.Sprintf("not judged (%s): %s", n.Collector, n.What)
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

// literal is what remediation text quotes or names verbatim: a quoted
// setting or command ("sshd -T"), a command line that starts with a tool's
// name and runs to the end of its clause, or an absolute path.
var literal = regexp.MustCompile(`"([^"\n]+)"|` +
	`\b(?:apt-get|apt-mark|apt|dpkg|systemctl|augenrules|auditctl|sshd|ssh-keygen|nft|update-grub|update-initramfs|` +
	`nvidia-smi|nvidia-ctk|modprobe|usermod|passwd|visudo|cryptsetup|systemd-cryptenroll|kubectl|mokutil)\b` +
	`(?: (?:[^.;,()"\n ]|\.[^\s.;,()"]| [^.;,()"\n ])*)?|` +
	`(/[A-Za-z0-9._/@+:=*-]*[A-Za-z0-9_/@+=*-])`)

// remediationMarkdown writes a check's remediation as Markdown: what it
// quotes (a setting, a command) and the paths it names become code spans,
// and the rest is escaped prose, so that a reader copies commands exactly.
func remediationMarkdown(text string) string {
	var b strings.Builder
	last := 0
	for _, m := range literal.FindAllStringSubmatchIndex(text, -1) {
		isPath, isCommand := m[4] >= 0, m[2] < 0 && m[4] < 0
		// A tool's name inside a longer word ("gpuhost-rootfs") and a path
		// glued to a word ("ROOTFS/etc/x") are prose, not literals.
		if (isCommand && m[1] < len(text) && strings.ContainsRune("-_/", rune(text[m[1]]))) ||
			(isPath && m[0] > 0 && isWordByte(text[m[0]-1])) {
			continue
		}
		b.WriteString(prose(text[last:m[0]]))
		lit := text[m[0]:m[1]]
		if m[2] >= 0 {
			lit = text[m[2]:m[3]]
		}
		b.WriteString(codeSpan(lit))
		last = m[1]
	}
	b.WriteString(prose(text[last:]))
	return "**Remediation.** " + b.String()
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

// prose escapes a run of text between code spans, keeping the blanks
// around it that escape.Markdown, made for whole paragraphs, trims.
func prose(s string) string {
	lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
	return lead + escape.Markdown(s)
}

// codeSpan shows s as inline code, fenced with one more backtick than its
// longest run of them (CommonMark's rule), and padded when it starts or
// ends with one.
func codeSpan(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
