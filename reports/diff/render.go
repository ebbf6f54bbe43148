package diff

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/gpuhost/gpuhost/reports/escape"
)

// transition shows how a value moved: "fail -> pass", or just one side when
// the check is only in one report.
func transition(from, to string) string { return transitionWith(from, to, " -> ", plain) }

func transitionWith(from, to, arrow string, esc func(string) string) string {
	switch {
	case from == "":
		return esc(to)
	case to == "", from == to:
		return esc(from)
	}
	return esc(from) + arrow + esc(to)
}

func (c Change) detail() string {
	var parts []string
	if c.Waiver != nil {
		w := c.Waiver
		state := "waiver"
		if w.Expired {
			state = "lapsed waiver"
		}
		parts = append(parts, fmt.Sprintf("%s by %s until %s: %s", state, w.ApprovedBy, w.Expires, w.Justification))
	}
	if len(c.Messages) > 0 {
		m := c.Messages[0]
		if len(c.Messages) > 1 {
			m += fmt.Sprintf(" (+%d more)", len(c.Messages)-1)
		}
		parts = append(parts, m)
	}
	return strings.Join(parts, "; ")
}

// plain is report text for a terminal, shortened: reports are untrusted,
// and a message carrying escape sequences must not drive the reader's
// terminal.
func plain(s string) string {
	s = escape.Terminal(strings.ReplaceAll(s, string(unicode.ReplacementChar), ""))
	const max = 160
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

func (d *Diff) header(arrow string, esc func(string) string) string {
	return fmt.Sprintf("%s (%s)%s%s (%s)",
		esc(d.Old.File), esc(d.Old.Target.Ref), arrow, esc(d.New.File), esc(d.New.Target.Ref))
}

func (d *Diff) counts() string {
	var parts []string
	for _, l := range d.lists() {
		parts = append(parts, fmt.Sprintf("%d %s", len(*l.changes), strings.ToLower(l.title)))
	}
	return strings.Join(parts, ", ")
}

func renderTable(w io.Writer, d *Diff) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "gpuhost report diff:", d.header(" -> ", plain))
	for _, l := range d.lists() {
		if len(*l.changes) == 0 {
			continue
		}
		fmt.Fprintf(bw, "\n%s (%d)\n", strings.ToUpper(l.title), len(*l.changes))
		tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ID\tSEVERITY\tSTATUS\tTITLE\tDETAIL")
		for _, c := range *l.changes {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", plain(c.ID), transition(c.OldSeverity, c.NewSeverity),
				transition(c.OldStatus, c.NewStatus), plain(c.Title), plain(c.detail()))
		}
		tw.Flush()
	}
	fmt.Fprintf(bw, "\n%s\n", d.counts())
	return bw.Flush()
}

// md is plain for a Markdown table cell.
func md(s string) string { return escape.Markdown(plain(s)) }

func renderMarkdown(w io.Writer, d *Diff) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# gpuhost report diff\n\n%s\n\n", d.header(" → ", md))
	if d.Old.PolicyDigest != d.New.PolicyDigest {
		fmt.Fprintf(bw, "Policy changed: %s → %s\n\n", md(d.Old.PolicyDigest), md(d.New.PolicyDigest))
	}
	fmt.Fprintf(bw, "%s\n", md(d.counts()))
	for _, l := range d.lists() {
		fmt.Fprintf(bw, "\n## %s (%d)\n\n", l.title, len(*l.changes))
		if len(*l.changes) == 0 {
			bw.WriteString("_None._\n")
			continue
		}
		bw.WriteString("| ID | Severity | Status | Title | Detail |\n| --- | --- | --- | --- | --- |\n")
		for _, c := range *l.changes {
			fmt.Fprintf(bw, "| %s | %s | %s | %s | %s |\n", md(c.ID), transitionWith(c.OldSeverity, c.NewSeverity, " → ", md),
				transitionWith(c.OldStatus, c.NewStatus, " → ", md), md(c.Title), md(c.detail()))
		}
	}
	return bw.Flush()
}
