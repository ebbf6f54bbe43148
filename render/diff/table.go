package diff

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

type tableRenderer struct{}

func (tableRenderer) Format() string { return "table" }

func (tableRenderer) Render(w io.Writer, d *Diff) error {
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
