package diff

import (
	"bufio"
	"fmt"
	"io"

	"github.com/gpuhost/gpuhost/render/escape"
)

type markdownRenderer struct{}

func (markdownRenderer) Format() string { return "markdown" }

// md is plain for a Markdown table cell.
func md(s string) string { return escape.Markdown(plain(s)) }

func (markdownRenderer) Render(w io.Writer, d *Diff) error {
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
