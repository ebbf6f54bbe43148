// Package summary renders scan's FleetSummary, the one document `scan facts
// --summary` writes over a fleet: a row per check with how many hosts fail,
// error on, waive, skip and pass it. Host refs come from untrusted facts
// documents and titles from outside packs, so text goes through
// render/escape.
package summary

import (
	"github.com/gpuhost/gpuhost/render"
	"github.com/gpuhost/gpuhost/scan"
)

// Renderer writes a fleet summary in one format. Implementations live one
// per file.
type Renderer = render.Renderer[*scan.FleetSummary]

// registry holds the summary formats, in the order help text lists them.
var registry = render.NewRegistry[*scan.FleetSummary]("summary", tableRenderer{}, jsonRenderer{})

// Lookup returns the renderer for a format name.
func Lookup(format string) (Renderer, error) { return registry.Lookup(format) }

// Formats lists the format names.
func Formats() []string { return registry.Formats() }
