package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/gpuhost/gpuhost/render/escape"
	"github.com/gpuhost/gpuhost/reports"
)

// github writes GitHub Actions workflow commands: one annotation per
// failed, errored or waived check, which a workflow step's log turns into
// annotations on the run, and a notice with the coverage first, so that a
// run whose checks mostly did not run does not read as clean. Failures at
// critical or high are errors, the rest warnings; an errored check is an
// error; a waived one a notice.
type github struct{}

var _ Renderer = (*github)(nil)

func (*github) Format() string { return "github" }

// Ext is the ending of a file of workflow commands.
func (*github) Ext() string { return "github.txt" }

func (*github) Render(w io.Writer, rep *reports.Report) error {
	bw := bufio.NewWriter(w)
	target := strings.TrimSpace(rep.Target.Kind + " " + rep.Target.Ref)
	fmt.Fprintf(bw, "::notice title=%s::%s\n", escape.GitHubProperty("gpuhost coverage of "+target),
		escape.GitHubData(coverageLine(reports.CoverageOf(rep))))
	for _, c := range rep.Caveats {
		fmt.Fprintf(bw, "::warning title=%s::%s\n", escape.GitHubProperty("gpuhost caveat for "+target), escape.GitHubData(c))
	}
	for _, res := range rep.Results {
		level := ""
		switch res.Status {
		case reports.StatusFail:
			level = "warning"
			if reports.SeverityRank(res.Severity) <= reports.SeverityRank("high") {
				level = "error"
			}
		case reports.StatusError:
			level = "error"
		case reports.StatusWaived:
			level = "notice"
		default:
			continue
		}
		title := fmt.Sprintf("%s (%s, %s): %s", res.ID, res.Severity, res.Status, res.Title)
		// The messages, an expired waiver and the remediation, as JUnit's
		// failure body has them.
		msg := strings.TrimSpace(problemBody(res))
		if res.Status == reports.StatusWaived {
			msg = waiverLine(res.Waiver) + "\n" + strings.Join(res.Messages, "\n")
		}
		fmt.Fprintf(bw, "::%s title=%s::%s\n", level, escape.GitHubProperty(title), escape.GitHubData(msg))
	}
	return bw.Flush()
}
