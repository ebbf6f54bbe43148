package report

import (
	"bufio"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/gpuhost/gpuhost/render/escape"
	"github.com/gpuhost/gpuhost/reports"
)

// complianceHeading names the profile and its benchmark.
func complianceHeading(c *reports.Compliance) string {
	return fmt.Sprintf("Compliance: %s (%s %s)", c.Title, c.Benchmark, c.Version)
}

// complianceCounts is one line of control counts, in ControlStatuses'
// order, with the rules gpuhost judged beside them: a profile whose rules
// are mostly not evaluated proves little however few of them fail.
func complianceCounts(c *reports.Compliance) string {
	parts := make([]string, 0, len(reports.ControlStatuses))
	total := 0
	for _, st := range reports.ControlStatuses {
		total += c.Summary[st]
		if n := c.Summary[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, strings.ReplaceAll(st, "_", " ")))
		}
	}
	rules, judged := 0, c.Rules[reports.ControlPass]+c.Rules[reports.ControlFail]
	for _, n := range c.Rules {
		rules += n
	}
	return fmt.Sprintf("%d controls: %s; %d of %d rules judged pass or fail", total, strings.Join(parts, ", "), judged, rules)
}

// attention are the controls a reviewer acts on, in ControlStatuses' order:
// failed, errored, then not evaluated.
func attention(c *reports.Compliance) []reports.Control {
	var out []reports.Control
	for _, st := range []string{reports.ControlFail, reports.ControlError} {
		for _, ctl := range c.Controls {
			if ctl.Status == st {
				out = append(out, ctl)
			}
		}
	}
	return out
}

// writeComplianceTable is the table format's compliance block: per-section
// totals, then each failed or errored control with its reason and
// remediation.
func writeComplianceTable(bw *bufio.Writer, c *reports.Compliance) {
	bw.WriteString(escape.Terminal(complianceHeading(c)) + "\n")
	bw.WriteString("  " + escape.Terminal(complianceCounts(c)) + "\n\n")
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	head := []string{"  SECTION"}
	for _, st := range reports.ControlStatuses {
		head = append(head, strings.ToUpper(strings.ReplaceAll(st, "_", " ")))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, s := range c.Sections {
		row := []string{"  " + escape.Terminal(strings.TrimSpace(s.ID+" "+s.Title))}
		for _, st := range reports.ControlStatuses {
			row = append(row, fmt.Sprint(s.ByStatus[st]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
	if list := attention(c); len(list) > 0 {
		bw.WriteString("\n")
		for _, ctl := range list {
			fmt.Fprintf(bw, "  %s %s [%s]\n", escape.Terminal(ctl.ID), escape.Terminal(ctl.Title), ctl.Status)
			for _, part := range wrap(escape.Terminal(ctl.Reason), maxMessageWidth) {
				bw.WriteString("      " + part + "\n")
			}
			if ctl.Remediation != "" {
				for i, part := range wrap(escape.Terminal(ctl.Remediation), maxMessageWidth) {
					lead := "      fix: "
					if i > 0 {
						lead = "           "
					}
					bw.WriteString(lead + part + "\n")
				}
			}
		}
	}
	bw.WriteString("\n")
}

// writeComplianceMarkdown is the markdown format's compliance block.
func writeComplianceMarkdown(bw *bufio.Writer, c *reports.Compliance) {
	bw.WriteString("## " + escape.Markdown(complianceHeading(c)) + "\n\n")
	bw.WriteString(escape.Markdown(complianceCounts(c)) + "\n\n")
	head := []string{"Section"}
	align := []string{"---"}
	for _, st := range reports.ControlStatuses {
		head = append(head, strings.ReplaceAll(st, "_", " "))
		align = append(align, "---:")
	}
	mdRow(bw, head)
	mdRow(bw, align)
	for _, s := range c.Sections {
		row := []string{escape.Markdown(strings.TrimSpace(s.ID + " " + s.Title))}
		for _, st := range reports.ControlStatuses {
			row = append(row, fmt.Sprint(s.ByStatus[st]))
		}
		mdRow(bw, row)
	}
	bw.WriteString("\n")
	if list := attention(c); len(list) > 0 {
		mdRow(bw, []string{"Control", "Status", "Title", "Why", "Remediation"})
		mdRow(bw, []string{"---", "---", "---", "---", "---"})
		for _, ctl := range list {
			mdRow(bw, []string{escape.Markdown(ctl.ID), ctl.Status, escape.Markdown(ctl.Title), escape.Markdown(ctl.Reason), remediationMarkdown(ctl.Remediation)})
		}
		bw.WriteString("\n")
	}
}
