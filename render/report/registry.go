// Package report renders gpuhost.report/v1 (package reports) in every
// format a user asks for, one file per format: table, json, sarif, junit,
// markdown, html, github (workflow commands), tap and xccdf (a compliance
// profile's rules), and the NDJSON line encoder fleet scans stream.
package report

import (
	"io"

	"github.com/gpuhost/gpuhost/render"
	"github.com/gpuhost/gpuhost/reports"
)

// Renderer writes a report in one format, to a file whose name ends in its
// Ext. Implementations live one per file.
type Renderer interface {
	render.Renderer[*reports.Report]
	// Ext is how the name of a report file of this format ends, without
	// the leading dot ("junit.xml"): the Packer components name the files
	// they write by it.
	Ext() string
}

// Merger is a renderer whose format holds several reports in one document
// (SARIF: a run per host; JUnit: a testsuite per host), so that a scan of
// many documents writes one valid file rather than files back to back.
type Merger interface {
	Renderer
	RenderAll(w io.Writer, reps []*reports.Report) error
}

// registry holds the report formats, in the order help text lists them.
var registry = render.NewRegistry[*reports.Report]("report",
	&github{}, &htmlRenderer{}, &jsonRenderer{}, &junit{}, &markdown{}, &sarif{}, &table{}, &tap{}, &xccdfRenderer{})

// Lookup returns the renderer for a format name.
func Lookup(format string) (Renderer, error) {
	r, err := registry.Lookup(format)
	if err != nil {
		return nil, err
	}
	// Every renderer registered above is a Renderer (their var _ lines).
	return r.(Renderer), nil
}

// Formats lists the format names, sorted.
func Formats() []string { return registry.Formats() }
