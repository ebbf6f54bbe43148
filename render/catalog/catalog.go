// Package catalog renders a policy pack's catalog (policy/catalog) for
// review: Markdown (docs/policies.md is the default pack's) and one
// self-contained HTML page. The text comes from the pack, which a
// third-party bundle may have written, so all of it goes through
// render/escape or html/template.
package catalog

import (
	"strings"

	policycatalog "github.com/gpuhost/gpuhost/policy/catalog"
	"github.com/gpuhost/gpuhost/policy/params"
	"github.com/gpuhost/gpuhost/render"
)

// Renderer writes a catalog in one format. Implementations live one per
// file.
type Renderer = render.Renderer[*policycatalog.Catalog]

// registry holds the catalog formats, in the order help text lists them.
var registry = render.NewRegistry[*policycatalog.Catalog]("catalog", markdownRenderer{}, htmlRenderer{})

// Lookup returns the renderer for a format name.
func Lookup(format string) (Renderer, error) { return registry.Lookup(format) }

// Formats lists the format names.
func Formats() []string { return registry.Formats() }

// orNone is a list joined, or "none".
func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// controlsOrNone is a check's control list, or "none".
func controlsOrNone(controls map[string][]string) string {
	if s := policycatalog.ControlList(controls); s != "" {
		return s
	}
	return "none"
}

// paramName is how a parameter a check reads is shown: by name, or in words
// for a key chosen at run time.
func paramName(p string, name func(string) string) string {
	if p == params.All {
		return "any (key chosen at run time)"
	}
	return name(p)
}

// anchor is the GitHub-style anchor of a check's heading.
func anchor(id string) string {
	return strings.ToLower(strings.Map(func(r rune) rune {
		if r == ' ' {
			return '-'
		}
		if r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return -1
	}, id))
}
