package reports

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

type markdown struct{}

var _ Renderer = (*markdown)(nil)

func init() { register(&markdown{}) }

func (*markdown) Format() string { return "markdown" }

// statusHeadings names the sections in the order they appear.
var statusHeadings = map[string]string{
	StatusFail:   "Failures",
	StatusWaived: "Waived",
	StatusError:  "Errors",
	StatusSkip:   "Skipped",
	StatusPass:   "Passed",
}

func (*markdown) Render(w io.Writer, rep *Report) error {
	bw := bufio.NewWriter(w)
	s := tally(rep)

	fmt.Fprintf(bw, "# gpuhost scan: %s %s\n\n", mdText(rep.Target.Kind), mdText(rep.Target.Ref))
	var meta []string
	if rep.Target.ScannedAt != "" {
		meta = append(meta, "Scanned "+mdCode(rep.Target.ScannedAt))
	}
	if rep.Target.Hostname != "" {
		meta = append(meta, "host "+mdCode(rep.Target.Hostname))
	}
	if rep.ToolVersion != "" {
		meta = append(meta, "gpuhost "+mdCode(rep.ToolVersion))
	}
	if rep.FactsDigest != "" {
		meta = append(meta, "facts "+mdCode(rep.FactsDigest))
	}
	if rep.PolicyDigest != "" {
		meta = append(meta, "policy "+mdCode(rep.PolicyDigest))
	}
	if len(meta) > 0 {
		bw.WriteString(strings.Join(meta, " · ") + "\n\n")
	}

	cov := coverageOf(rep)
	bw.WriteString(mdText(coverageLine(cov)) + "\n\n")
	for _, g := range cov.Gaps {
		bw.WriteString("- " + mdText(gapLine(g)) + "\n")
	}
	if len(cov.Gaps) > 0 {
		bw.WriteString("\n")
	}
	mdRow(bw, []string{"Status", "Count"})
	mdRow(bw, []string{"---", "---:"})
	for _, st := range Statuses {
		fmt.Fprintf(bw, "| %s | %d |\n", st, s.ByStatus[st])
	}
	fmt.Fprintf(bw, "| **total** | **%d** |\n\n", s.Total)
	parts := make([]string, 0, len(Severities))
	for _, sev := range Severities {
		parts = append(parts, fmt.Sprintf("%s %d", sev, s.BySeverity[sev]))
	}
	fmt.Fprintf(bw, "Failures by severity: %s\n", strings.Join(parts, ", "))

	section := func(status string, header []string, row func(Result) []string) {
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
	section(StatusFail, []string{"ID", "Severity", "Title", "Messages", "Remediation"}, func(r Result) []string {
		msgs := cellLines(r.Messages)
		if r.Waiver != nil && r.Waiver.Expired {
			msgs += "<br>_" + mdCell(expiredWaiverLine(r.Waiver)) + "_"
		}
		return []string{mdCode(r.ID), mdCell(r.Severity), mdCell(r.Title), msgs, mdCell(r.Remediation)}
	})
	section(StatusWaived, []string{"ID", "Severity", "Title", "Approved by", "Expires", "Ticket", "Scope", "Justification", "Messages"}, func(r Result) []string {
		w := r.Waiver
		if w == nil {
			w = &Waiver{}
		}
		return []string{mdCode(r.ID), mdCell(r.Severity), mdCell(r.Title), mdCell(w.ApprovedBy), mdCell(w.Expires),
			mdCell(w.Ticket), mdCell(waiverScopeText(w.Scope)), mdCell(w.Justification), cellLines(r.Messages)}
	})
	section(StatusError, []string{"ID", "Severity", "Title", "Messages"}, func(r Result) []string {
		return []string{mdCode(r.ID), mdCell(r.Severity), mdCell(r.Title), cellLines(r.Messages)}
	})
	section(StatusSkip, []string{"ID", "Severity", "Title", "Reason"}, func(r Result) []string {
		return []string{mdCode(r.ID), mdCell(r.Severity), mdCell(r.Title), mdCell(firstMessage(r))}
	})

	passes := byStatus(rep, StatusPass)
	fmt.Fprintf(bw, "\n<details>\n<summary>Passed (%d)</summary>\n\n", len(passes))
	if len(passes) == 0 {
		bw.WriteString("_None._\n")
	} else {
		mdRow(bw, []string{"ID", "Severity", "Title"})
		mdRow(bw, []string{"---", "---", "---"})
		for _, r := range passes {
			mdRow(bw, []string{mdCode(r.ID), mdCell(r.Severity), mdCell(r.Title)})
		}
	}
	bw.WriteString("\n</details>\n")
	return bw.Flush()
}

func mdRow(w *bufio.Writer, cells []string) {
	w.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

// mdReplacer makes untrusted text inert in a GitHub table cell: pipes would
// split the cell, newlines end the row, and GitHub renders inline HTML, so
// markup characters become entities. Emphasis and link characters are
// escaped so a message cannot style itself or turn into a link.
var mdReplacer = strings.NewReplacer(
	"\\", "\\\\",
	"|", "\\|",
	"\r\n", "<br>",
	"\n", "<br>",
	"\r", "<br>",
	"&", "&amp;",
	"<", "&lt;",
	">", "&gt;",
	"`", "\\`",
	"*", "\\*",
	"_", "\\_",
	"[", "\\[",
	"]", "\\]",
)

func mdCell(s string) string { return mdReplacer.Replace(stripControls(s)) }

// mdText is mdCell for headings and prose.
func mdText(s string) string { return mdCell(s) }

// mdCode shows an identifier (id, digest, version, time) as code. Only
// plain identifier characters qualify: a backtick cannot be escaped inside a
// code span, and anything odd is better shown escaped than verbatim.
func mdCode(s string) string {
	if !codeSafe.MatchString(s) {
		return mdCell(s)
	}
	return "`" + s + "`"
}

var codeSafe = regexp.MustCompile(`^[A-Za-z0-9._:/@+=-]+$`)

func cellLines(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = mdCell(l)
	}
	return strings.Join(out, "<br>")
}

// stripControls drops control characters other than line breaks, which the
// cell escaping handles.
func stripControls(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return r
		}
		if r == '\t' {
			return ' '
		}
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}
