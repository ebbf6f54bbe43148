package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/gpuhost/gpuhost/render/escape"
	"github.com/gpuhost/gpuhost/reports"
)

// tap writes the Test Anything Protocol, version 13, one test point per
// check as conftest does: a pass is ok, a fail or an error not ok with its
// messages in a YAML block, a skip ok with a SKIP directive and its reason,
// and a waived check not ok with a TODO directive, which TAP consumers
// count as a known failure rather than a pass.
type tap struct{}

var _ Renderer = (*tap)(nil)

func (*tap) Format() string { return "tap" }

// Ext is the ending of a TAP file.
func (*tap) Ext() string { return "tap" }

func (*tap) Render(w io.Writer, rep *reports.Report) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "TAP version 13\n1..%d\n", len(rep.Results))
	for _, c := range rep.Caveats {
		fmt.Fprintf(bw, "# %s\n", escape.TAP(caveatLine(c)))
	}
	fmt.Fprintf(bw, "# %s\n", escape.TAP(coverageLine(reports.CoverageOf(rep))))
	for i, res := range rep.Results {
		desc := escape.TAP(res.ID + " " + res.Title)
		switch res.Status {
		case reports.StatusPass:
			fmt.Fprintf(bw, "ok %d - %s\n", i+1, desc)
		case reports.StatusSkip:
			fmt.Fprintf(bw, "ok %d - %s # SKIP %s\n", i+1, desc, escape.TAP(firstMessage(res)))
		case reports.StatusWaived:
			fmt.Fprintf(bw, "not ok %d - %s # TODO waived: %s\n", i+1, desc, escape.TAP(waiverLine(res.Waiver)))
		default:
			fmt.Fprintf(bw, "not ok %d - %s\n", i+1, desc)
			tapDetails(bw, res)
		}
	}
	return bw.Flush()
}

// tapDetails is the YAML block under a failing test point. Each value is
// a double-quoted YAML scalar; strconv's quoting is valid YAML for the
// text Terminal leaves.
func tapDetails(bw *bufio.Writer, res reports.Result) {
	bw.WriteString("  ---\n")
	fmt.Fprintf(bw, "  severity: %s\n", yamlString(res.Severity))
	fmt.Fprintf(bw, "  status: %s\n", yamlString(res.Status))
	bw.WriteString("  messages:\n")
	for _, m := range res.Messages {
		fmt.Fprintf(bw, "    - %s\n", yamlString(m))
	}
	if res.Waiver != nil && res.Waiver.Expired {
		fmt.Fprintf(bw, "  waiver: %s\n", yamlString("the "+expiredWaiverLine(res.Waiver)))
	}
	if res.Remediation != "" {
		fmt.Fprintf(bw, "  remediation: %s\n", yamlString(res.Remediation))
	}
	bw.WriteString("  ...\n")
}

// yamlString is s as a YAML double-quoted scalar on one line.
func yamlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range escape.Terminal(s) {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
