package reports

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/gpuhost/gpuhost/reports/escape"
)

// Column limits keep one result on one terminal line in the common case;
// the full text is in every other format.
const (
	maxTitleWidth   = 60
	maxMessageWidth = 120
)

// ANSI colours per status. Skip is dim yellow: present, but not a finding.
var statusColors = map[string]string{
	StatusFail:   "\x1b[31m",
	StatusError:  "\x1b[35m",
	StatusWaived: "\x1b[36m",
	StatusSkip:   "\x1b[2;33m",
	StatusPass:   "\x1b[32m",
}

const ansiReset = "\x1b[0m"

type table struct {
	color bool
}

var _ Renderer = (*table)(nil)

func init() { register(&table{}) }

// NewTable returns the "table" renderer; with color it marks statuses with
// ANSI colours, for a terminal. The registered "table" has no colour, so
// files and pipes stay clean.
func NewTable(color bool) Renderer { return &table{color: color} }

func (*table) Format() string { return "table" }

func (t *table) Render(w io.Writer, rep *Report) error {
	header := []string{"ID", "SEVERITY", "STATUS", "TITLE", "MESSAGE"}
	rows := make([][]string, 0, len(rep.Results))
	for _, res := range rep.Results {
		rows = append(rows, []string{
			escape.Terminal(res.ID),
			escape.Terminal(res.Severity),
			escape.Terminal(res.Status),
			truncate(escape.Terminal(res.Title), maxTitleWidth),
			truncate(escape.Terminal(tableMessage(res)), maxMessageWidth),
		})
	}
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = len(h)
	}
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}

	bw := bufio.NewWriter(w)
	cov := coverageOf(rep)
	bw.WriteString(escape.Terminal(coverageLine(cov)) + "\n")
	for _, g := range cov.Gaps {
		bw.WriteString("  " + truncate(escape.Terminal(gapLine(g)), maxMessageWidth+maxTitleWidth) + "\n")
	}
	bw.WriteString("\n")
	t.writeRow(bw, header, widths, "")
	for i, row := range rows {
		t.writeRow(bw, row, widths, rep.Results[i].Status)
	}
	s := tally(rep)
	fmt.Fprintf(bw, "\n%d checks: %d failed, %d errors, %d waived, %d skipped, %d passed\n",
		s.Total, s.ByStatus[StatusFail], s.ByStatus[StatusError], s.ByStatus[StatusWaived],
		s.ByStatus[StatusSkip], s.ByStatus[StatusPass])
	// A row cuts the waiver short; the accountable part (who, until when,
	// ticket, scope, why) is listed in full below the counts.
	if waived := byStatus(rep, StatusWaived); len(waived) > 0 {
		bw.WriteString("\nWaivers:\n")
		for _, res := range waived {
			fmt.Fprintf(bw, "  %s  %s\n", escape.Terminal(res.ID), escape.Terminal(waiverLine(res.Waiver)))
		}
	}
	return bw.Flush()
}

// writeRow pads every cell but the last on its visible width, so colour
// codes never shift the columns.
func (t *table) writeRow(w *bufio.Writer, row []string, widths []int, status string) {
	var line strings.Builder
	for i, cell := range row {
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
}

// tableMessage is the one line that explains a row.
func tableMessage(res Result) string {
	switch res.Status {
	case StatusWaived:
		return waiverLine(res.Waiver)
	case StatusFail:
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
