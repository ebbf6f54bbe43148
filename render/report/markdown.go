package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/gpuhost/gpuhost/render/escape"
	"github.com/gpuhost/gpuhost/reports"
)

type markdown struct{}

var _ Renderer = (*markdown)(nil)

func (*markdown) Format() string { return "markdown" }

// Ext is the ending of a markdown report file.
func (*markdown) Ext() string { return "md" }

// statusHeadings names the sections in the order they appear.
var statusHeadings = map[string]string{
	reports.StatusFail:   "Failures",
	reports.StatusWaived: "Waived",
	reports.StatusError:  "Errors",
	reports.StatusSkip:   "Skipped",
	reports.StatusPass:   "Passed",
}

func (*markdown) Render(w io.Writer, rep *reports.Report) error {
	bw := bufio.NewWriter(w)
	mdHeader(bw, rep)
	mdSummary(bw, rep)
	if rep.Compliance != nil {
		bw.WriteString("\n")
		writeComplianceMarkdown(bw, rep.Compliance)
	}
	mdUnsettledSections(bw, rep)
	mdPassed(bw, rep)
	return bw.Flush()
}

// mdHeader names the target and the provenance of the verdicts (when, where,
// by which tool, facts and policy) so a pasted report can be traced back to
// the scan that made it.
func mdHeader(bw *bufio.Writer, rep *reports.Report) {
	fmt.Fprintf(bw, "# gpuhost scan: %s %s\n\n", escape.Markdown(rep.Target.Kind), escape.Markdown(rep.Target.Ref))
	var meta []string
	if rep.Target.ScannedAt != "" {
		meta = append(meta, "Scanned "+escape.MarkdownCode(rep.Target.ScannedAt))
	}
	if rep.Target.Hostname != "" {
		meta = append(meta, "host "+escape.MarkdownCode(rep.Target.Hostname))
	}
	if rep.ToolVersion != "" {
		meta = append(meta, "gpuhost "+escape.MarkdownCode(rep.ToolVersion))
	}
	if rep.FactsDigest != "" {
		meta = append(meta, "facts "+escape.MarkdownCode(rep.FactsDigest))
	}
	if rep.PolicyDigest != "" {
		meta = append(meta, "policy "+escape.MarkdownCode(rep.PolicyDigest))
	}
	if len(meta) > 0 {
		bw.WriteString(strings.Join(meta, " · ") + "\n\n")
	}
}

// mdSummary comes before any finding so a reader first learns what the scan
// could not judge and how the verdicts add up, and does not mistake a short
// list of failures for a clean host.
func mdSummary(bw *bufio.Writer, rep *reports.Report) {
	s := reports.Tally(rep)
	cov := reports.CoverageOf(rep)
	for _, c := range rep.Caveats {
		bw.WriteString("> **" + escape.Markdown(caveatLine(c)) + "**\n\n")
	}
	bw.WriteString(escape.Markdown(coverageLine(cov)) + "\n\n")
	for _, g := range cov.Gaps {
		bw.WriteString("- " + escape.Markdown(gapLine(g)) + "\n")
	}
	for _, n := range cov.NotJudged {
		bw.WriteString("- " + escape.Markdown(notJudgedLine(n)) + "\n")
	}
	if len(cov.Gaps)+len(cov.NotJudged) > 0 {
		bw.WriteString("\n")
	}
	mdRow(bw, []string{"Status", "Count"})
	mdRow(bw, []string{"---", "---:"})
	for _, st := range reports.Statuses {
		if st == reports.StatusSkip {
			fmt.Fprintf(bw, "| skip: not applicable | %d |\n| skip: could not run | %d |\n", s.NotApplicable, s.CouldNotRun())
			continue
		}
		fmt.Fprintf(bw, "| %s | %d |\n", st, s.ByStatus[st])
	}
	fmt.Fprintf(bw, "| **total** | **%d** |\n\n", s.Total)
	parts := make([]string, 0, len(reports.Severities))
	for _, sev := range reports.Severities {
		parts = append(parts, fmt.Sprintf("%s %d", sev, s.BySeverity[sev]))
	}
	fmt.Fprintf(bw, "Failures by severity: %s\n", strings.Join(parts, ", "))
}

// mdUnsettledSections gives each status that needs a reader's attention a
// table of its own, with the columns that matter for that status: a failure
// needs its remediation, a waiver who approved it and until when.
func mdUnsettledSections(bw *bufio.Writer, rep *reports.Report) {
	mdSection(bw, rep, reports.StatusFail, []string{"ID", "Severity", "Title", "Messages", "Remediation"}, func(r reports.Result) []string {
		msgs := cellLines(r.Messages)
		if r.Waiver != nil && r.Waiver.Expired {
			msgs += "<br>_" + escape.Markdown(expiredWaiverLine(r.Waiver)) + "_"
		}
		return []string{escape.MarkdownCode(r.ID), escape.Markdown(r.Severity), escape.Markdown(r.Title), msgs, escape.Markdown(r.Remediation)}
	})
	mdSection(bw, rep, reports.StatusWaived, []string{"ID", "Severity", "Title", "Approved by", "Expires", "Ticket", "Scope", "Justification", "Messages"}, func(r reports.Result) []string {
		w := r.Waiver
		if w == nil {
			w = &reports.Waiver{}
		}
		return []string{escape.MarkdownCode(r.ID), escape.Markdown(r.Severity), escape.Markdown(r.Title), escape.Markdown(w.ApprovedBy), escape.Markdown(w.Expires),
			escape.Markdown(w.Ticket), escape.Markdown(waiverScopeText(w.Scope)), escape.Markdown(w.Justification), cellLines(r.Messages)}
	})
	mdSection(bw, rep, reports.StatusError, []string{"ID", "Severity", "Title", "Messages"}, func(r reports.Result) []string {
		return []string{escape.MarkdownCode(r.ID), escape.Markdown(r.Severity), escape.Markdown(r.Title), cellLines(r.Messages)}
	})
	mdSection(bw, rep, reports.StatusSkip, []string{"ID", "Severity", "Title", "Reason"}, func(r reports.Result) []string {
		return []string{escape.MarkdownCode(r.ID), escape.Markdown(r.Severity), escape.Markdown(r.Title), escape.Markdown(firstMessage(r))}
	})
}

// mdSection keeps every status's heading, empty marker and table layout
// alike, so the sections differ only in their columns.
func mdSection(bw *bufio.Writer, rep *reports.Report, status string, header []string, row func(reports.Result) []string) {
	rows := byStatus(rep, status)
	fmt.Fprintf(bw, "\n## %s\n\n", statusHeadings[status])
	if len(rows) == 0 {
		bw.WriteString("_None._\n")
		return
	}
	mdRow(bw, header)
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
	}
	mdRow(bw, seps)
	for _, r := range rows {
		mdRow(bw, row(r))
	}
}

// mdPassed folds the passes away in a details block: they are usually the
// longest list and the least interesting, and would bury the findings.
func mdPassed(bw *bufio.Writer, rep *reports.Report) {
	passes := byStatus(rep, reports.StatusPass)
	fmt.Fprintf(bw, "\n<details>\n<summary>Passed (%d)</summary>\n\n", len(passes))
	if len(passes) == 0 {
		bw.WriteString("_None._\n")
	} else {
		mdRow(bw, []string{"ID", "Severity", "Title"})
		mdRow(bw, []string{"---", "---", "---"})
		for _, r := range passes {
			mdRow(bw, []string{escape.MarkdownCode(r.ID), escape.Markdown(r.Severity), escape.Markdown(r.Title)})
		}
	}
	bw.WriteString("\n</details>\n")
}

func mdRow(w *bufio.Writer, cells []string) {
	w.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

func cellLines(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = escape.Markdown(l)
	}
	return strings.Join(out, "<br>")
}
