// Package report renders gpuhost.report/v1 (package reports) in every
// format a user asks for, one file per format: table, json, sarif, junit,
// markdown and html, and the NDJSON line encoder fleet scans stream.
package report

import (
	"github.com/gpuhost/gpuhost/render"
	"github.com/gpuhost/gpuhost/reports"
)

// Renderer writes a report in one format. Implementations live one per file.
type Renderer = render.Renderer[*reports.Report]

// registry holds the report formats, in the order help text lists them.
var registry = render.NewRegistry[*reports.Report]("report",
	&htmlRenderer{}, &jsonRenderer{}, &junit{}, &markdown{}, &sarif{}, &table{})

// Lookup returns the renderer for a format name.
func Lookup(format string) (Renderer, error) { return registry.Lookup(format) }

// Formats lists the format names, sorted.
func Formats() []string { return registry.Formats() }
