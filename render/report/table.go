package report

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
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
	color         bool
	width         int
	notApplicable bool
}

var _ Renderer = (*table)(nil)

// TableOption configures the table renderer.
type TableOption func(*table)

// WithColor marks statuses with ANSI colours, for a terminal.
func WithColor(on bool) TableOption { return func(t *table) { t.color = on } }

// WithWidth fits every row to a terminal of this many columns: the title
// is cut and the message wrapped so that no line is longer. Zero (the
// default, for files and pipes) keeps each column at its own limit.
func WithWidth(columns int) TableOption { return func(t *table) { t.width = columns } }

// WithNotApplicable lists each check that does not apply to the target as
// a row of its own; by default they are folded into one counted line, so
// that a rootfs scan's many live-only checks do not push the findings off
// the screen.
func WithNotApplicable(on bool) TableOption { return func(t *table) { t.notApplicable = on } }

// NewTable returns the "table" renderer. The registered "table" has no
// colour and no width, so files and pipes stay clean and whole.
func NewTable(opts ...TableOption) Renderer {
	t := &table{}
	for _, o := range opts {
		o(t)
	}
	return t
}

func (*table) Format() string { return "table" }

// Ext is the ending of a table report file.
func (*table) Ext() string { return "txt" }

func (t *table) Render(w io.Writer, rep *reports.Report) error {
	header := []string{"ID", "SEVERITY", "STATUS", "TITLE", "MESSAGE"}
	shown, folded := t.rowsOf(rep)
	rows := make([][]string, 0, len(shown))
	for _, res := range shown {
		rows = append(rows, []string{
			escape.Terminal(res.ID),
			escape.Terminal(res.Severity),
			escape.Terminal(res.Status),
			escape.Terminal(res.Title),
			escape.Terminal(tableMessage(res)),
		})
	}
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = len(h)
	}
	for _, row := range rows {
		for i, cell := range row[:len(row)-2] {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	titleWidth, messageWidth := t.fit(widths[:3])
	for _, row := range rows {
		row[3] = truncate(row[3], titleWidth)
		widths[3] = max(widths[3], utf8.RuneCountInString(row[3]))
	}

	bw := bufio.NewWriter(w)
	cov := reports.CoverageOf(rep)
	for _, c := range rep.Caveats {
		t.paragraph(bw, "", "  ", caveatLine(c))
	}
	t.paragraph(bw, "", "", coverageLine(cov))
	lines := make([]string, 0, len(cov.Gaps)+len(cov.NotJudged))
	for _, g := range cov.Gaps {
		lines = append(lines, gapLine(g))
	}
	for _, n := range cov.NotJudged {
		lines = append(lines, notJudgedLine(n))
	}
	for _, l := range lines {
		t.paragraph(bw, "  ", "    ", l)
	}
	bw.WriteString("\n")
	if rep.Compliance != nil {
		writeComplianceTable(bw, rep.Compliance)
	}
	t.writeRow(bw, header, widths, messageWidth, "")
	for i, row := range rows {
		t.writeRow(bw, row, widths, messageWidth, shown[i].Status)
	}
	if len(folded) > 0 {
		bw.WriteString("\n")
		t.paragraph(bw, "", "", foldedLine(folded, rep.Target.Kind))
	}
	s := reports.Tally(rep)
	bw.WriteString("\n")
	t.paragraph(bw, "", "  ", fmt.Sprintf("%d checks: %d failed, %d errors, %d waived, %s, %d passed",
		s.Total, s.ByStatus[reports.StatusFail], s.ByStatus[reports.StatusError], s.ByStatus[reports.StatusWaived],
		skippedCounts(s), s.ByStatus[reports.StatusPass]))
	// The failures again, by id, most severe first: with many rows, the
	// last screen still names every one.
	if failed := failedIDs(shown); len(failed) > 0 {
		t.paragraph(bw, "", "  ", fmt.Sprintf("Failed (%d): %s", len(failed), strings.Join(failed, ", ")))
	}
	// A row cuts the waiver short; the accountable part (who, until when,
	// ticket, scope, why) is listed in full below the counts.
	if waived := byStatus(rep, reports.StatusWaived); len(waived) > 0 {
		bw.WriteString("\nWaivers:\n")
		for _, res := range waived {
			t.paragraph(bw, "  ", "    ", res.ID+"  "+waiverLine(res.Waiver))
		}
	}
	return bw.Flush()
}

// paragraph writes a line of prose, neutralized for the terminal: fitted
// to a terminal's width, wrapped with first and rest as the indents of its
// first and further lines; otherwise whole, as files have it.
func (t *table) paragraph(w *bufio.Writer, first, rest, text string) {
	text = escape.Terminal(text)
	if t.width <= 0 {
		w.WriteString(first + text + "\n")
		return
	}
	for i, part := range wrap(text, max(minMessageWidth, t.width-len(rest))) {
		indent := first
		if i > 0 {
			indent = rest
		}
		w.WriteString(indent + part + "\n")
	}
}

// writeRow pads every cell but the last on its visible width, so colour
// codes never shift the columns, and wraps the last (the message) under
// its own column.
func (t *table) writeRow(w *bufio.Writer, row []string, widths []int, messageWidth int, status string) {
	parts := wrap(row[len(row)-1], messageWidth)
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

// Narrowest title and message columns: below these a fitted row would
// say nothing, so a very narrow terminal wraps instead.
const (
	minTitleWidth   = 16
	minMessageWidth = 24
)

// fit gives the title and message columns their widths: their limits, or,
// fitted to a terminal, what the fixed columns (id, severity, status)
// leave, two fifths of it to the title.
func (t *table) fit(fixed []int) (title, message int) {
	if t.width <= 0 {
		return maxTitleWidth, maxMessageWidth
	}
	rest := t.width
	for _, w := range fixed {
		rest -= w + 2
	}
	rest -= 2
	title = min(maxTitleWidth, max(minTitleWidth, rest*2/5))
	message = min(maxMessageWidth, max(minMessageWidth, rest-title))
	return title, message
}

// rowsOf orders the rows so that what needs reading ends up on the last
// screen, just above the counts: passes first, then checks that could not
// run, waivers, errors, and failures, the most severe last. Checks that do
// not apply to the target are folded into one line unless asked for.
func (t *table) rowsOf(rep *reports.Report) (shown, folded []reports.Result) {
	rank := map[string]int{reports.StatusPass: 0, reports.StatusSkip: 1, reports.StatusWaived: 2, reports.StatusError: 3, reports.StatusFail: 4}
	for _, res := range rep.Results {
		if res.Status == reports.StatusSkip && res.OutOfScope && !t.notApplicable {
			folded = append(folded, res)
			continue
		}
		shown = append(shown, res)
	}
	slices.SortStableFunc(shown, func(a, b reports.Result) int {
		if c := cmp.Compare(rank[a.Status], rank[b.Status]); c != 0 {
			return c
		}
		// SeverityRank counts down from critical.
		return cmp.Compare(reports.SeverityRank(b.Severity), reports.SeverityRank(a.Severity))
	})
	return shown, folded
}

// failedIDs are the failed checks' ids, most severe first, from rows that
// put the most severe last.
func failedIDs(rows []reports.Result) []string {
	var ids []string
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Status == reports.StatusFail {
			ids = append(ids, rows[i].ID)
		}
	}
	return ids
}

// foldedLine counts the checks that do not apply to the target.
func foldedLine(folded []reports.Result, kind string) string {
	what := "this target"
	if kind != "" {
		what = kind + " targets"
	}
	if len(folded) == 1 {
		return fmt.Sprintf("1 check does not apply to %s and is not listed (--show-not-applicable lists it).", what)
	}
	return fmt.Sprintf("%d checks do not apply to %s and are not listed (--show-not-applicable lists them).", len(folded), what)
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
