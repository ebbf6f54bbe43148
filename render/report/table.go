package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gpuhost/gpuhost/render/escape"
	"github.com/gpuhost/gpuhost/reports"
)

// Column limits keep a row readable on a terminal. A title longer than
// its column is cut (the full one is in every other format); a message is
// never cut but wraps onto lines of its own under the message column, since
// the end of a finding ("...; want no") is often what matters.
const (
	maxTitleWidth   = 60
	maxMessageWidth = 100
)

// ANSI colours per status. Skip is dim yellow: present, but not a finding.
var statusColors = map[string]string{
	reports.StatusFail:   "\x1b[31m",
	reports.StatusError:  "\x1b[35m",
	reports.StatusWaived: "\x1b[36m",
	reports.StatusSkip:   "\x1b[2;33m",
	reports.StatusPass:   "\x1b[32m",
}

const ansiReset = "\x1b[0m"

type table struct {
	color bool
}

var _ Renderer = (*table)(nil)

// NewTable returns the "table" renderer; with color it marks statuses with
// ANSI colours, for a terminal. The registered "table" has no colour, so
// files and pipes stay clean.
func NewTable(color bool) Renderer { return &table{color: color} }

func (*table) Format() string { return "table" }

// Ext is the ending of a table report file.
func (*table) Ext() string { return "txt" }

func (t *table) Render(w io.Writer, rep *reports.Report) error {
	header := []string{"ID", "SEVERITY", "STATUS", "TITLE", "MESSAGE"}
	rows := make([][]string, 0, len(rep.Results))
	for _, res := range rep.Results {
		rows = append(rows, []string{
			escape.Terminal(res.ID),
			escape.Terminal(res.Severity),
			escape.Terminal(res.Status),
			truncate(escape.Terminal(res.Title), maxTitleWidth),
			escape.Terminal(tableMessage(res)),
		})
	}
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = len(h)
	}
	for _, row := range rows {
		for i, cell := range row[:len(row)-1] {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}

	bw := bufio.NewWriter(w)
	cov := reports.CoverageOf(rep)
	bw.WriteString(escape.Terminal(coverageLine(cov)) + "\n")
	lines := make([]string, 0, len(cov.Gaps)+len(cov.NotJudged))
	for _, g := range cov.Gaps {
		lines = append(lines, gapLine(g))
	}
	for _, n := range cov.NotJudged {
		lines = append(lines, notJudgedLine(n))
	}
	for _, l := range lines {
		for i, part := range wrap(escape.Terminal(l), maxMessageWidth+maxTitleWidth) {
			indent := "  "
			if i > 0 {
				indent = "    "
			}
			bw.WriteString(indent + part + "\n")
		}
	}
	bw.WriteString("\n")
	if rep.Compliance != nil {
		writeComplianceTable(bw, rep.Compliance)
	}
	t.writeRow(bw, header, widths, "")
	for i, row := range rows {
		t.writeRow(bw, row, widths, rep.Results[i].Status)
	}
	s := reports.Tally(rep)
	fmt.Fprintf(bw, "\n%d checks: %d failed, %d errors, %d waived, %d skipped, %d passed\n",
		s.Total, s.ByStatus[reports.StatusFail], s.ByStatus[reports.StatusError], s.ByStatus[reports.StatusWaived],
		s.ByStatus[reports.StatusSkip], s.ByStatus[reports.StatusPass])
	// A row cuts the waiver short; the accountable part (who, until when,
	// ticket, scope, why) is listed in full below the counts.
	if waived := byStatus(rep, reports.StatusWaived); len(waived) > 0 {
		bw.WriteString("\nWaivers:\n")
		for _, res := range waived {
			fmt.Fprintf(bw, "  %s  %s\n", escape.Terminal(res.ID), escape.Terminal(waiverLine(res.Waiver)))
		}
	}
	return bw.Flush()
}

// writeRow pads every cell but the last on its visible width, so colour
// codes never shift the columns, and wraps the last (the message) under
// its own column.
func (t *table) writeRow(w *bufio.Writer, row []string, widths []int, status string) {
	parts := wrap(row[len(row)-1], maxMessageWidth)
	row = append(row[:len(row)-1:len(row)-1], parts[0])
	var line strings.Builder
	indent := 0
	for i, cell := range row {
		if i < len(row)-1 {
			indent += widths[i] + 2
		}
		last := i == len(row)-1
		text := cell
		if i == 2 && t.color && status != "" {
			if c, ok := statusColors[status]; ok {
				text = c + cell + ansiReset
			}
		}
		line.WriteString(text)
		if !last {
			line.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+2))
		}
	}
	w.WriteString(strings.TrimRight(line.String(), " "))
	w.WriteByte('\n')
	for _, part := range parts[1:] {
		w.WriteString(strings.Repeat(" ", indent) + part + "\n")
	}
}

// wrap breaks s into lines of at most width runes, at spaces where it can
// and inside a word longer than a line where it must. It always returns at
// least one line.
func wrap(s string, width int) []string {
	var lines []string
	var cur []rune
	for _, word := range strings.Fields(s) {
		w := []rune(word)
		for len(w) > width {
			if len(cur) > 0 {
				lines = append(lines, string(cur))
				cur = nil
			}
			lines = append(lines, string(w[:width]))
			w = w[width:]
		}
		switch {
		case len(cur) == 0:
			cur = w
		case len(cur)+1+len(w) <= width:
			cur = append(append(cur, ' '), w...)
		default:
			lines = append(lines, string(cur))
			cur = w
		}
	}
	if len(cur) > 0 || len(lines) == 0 {
		lines = append(lines, string(cur))
	}
	return lines
}

// tableMessage is the one line that explains a row.
func tableMessage(res reports.Result) string {
	switch res.Status {
	case reports.StatusWaived:
		return waiverLine(res.Waiver)
	case reports.StatusFail:
		msg := firstMessage(res)
		if n := len(res.Messages); n > 1 {
			msg += fmt.Sprintf(" (+%d more)", n-1)
		}
		if res.Waiver != nil && res.Waiver.Expired {
			msg += " [" + expiredWaiverLine(res.Waiver) + "]"
		}
		return msg
	default:
		return firstMessage(res)
	}
}
