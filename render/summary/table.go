package summary

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gpuhost/gpuhost/render/escape"
	"github.com/gpuhost/gpuhost/scan"
)

type tableRenderer struct{}

func (tableRenderer) Format() string { return "table" }

// Render writes the summary as an aligned text table.
func (tableRenderer) Render(w io.Writer, s *scan.FleetSummary) error {
	fmt.Fprintf(w, "%d hosts: %d failing at or above %s, %d untrusted\n\n", s.Hosts, s.HostsFailing, oneLine(s.FailOn), s.HostsUntrusted)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSEVERITY\tFAIL\tERROR\tWAIVED\tSKIP\tPASS\tTITLE\tFAILING (FIRST)")
	for _, c := range s.Rows() {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", oneLine(c.ID), oneLine(c.Severity), c.Fail, c.Error, c.Waived, c.Skip, c.Pass,
			oneLine(c.Title), oneLine(strings.Join(c.Failing, ", ")))
	}
	return tw.Flush()
}

// oneLine keeps a title from an outside pack, or a host ref from an
// untrusted document, from breaking the table or driving the terminal.
func oneLine(s string) string { return strings.Join(strings.Fields(escape.Terminal(s)), " ") }
