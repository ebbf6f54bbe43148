package report

import (
	"encoding/json"
	"io"

	"github.com/gpuhost/gpuhost/reports"
)

// jsonRenderer writes the Report itself: the gpuhost.report/v1 document.
type jsonRenderer struct{}

var _ Renderer = (*jsonRenderer)(nil)

func (*jsonRenderer) Format() string { return "json" }

// Ext is the ending of a json report file.
func (*jsonRenderer) Ext() string { return "json" }

func (*jsonRenderer) Render(w io.Writer, rep *reports.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// The document is read by tools and people, not embedded in HTML, so
	// "<" and "&" in messages stay readable.
	enc.SetEscapeHTML(false)
	// Encode ends with the newline files are expected to have.
	return enc.Encode(rep)
}
