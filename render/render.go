// Package render is what every user-facing document gpuhost writes has in
// common: a Renderer writes one kind of document in one format, and a
// Registry holds a kind's renderers by format name. The kinds live beside
// it, each a package with one file per format: render/report
// (gpuhost.report/v1), render/diff (`report diff`), render/catalog
// (`policy doc`) and render/summary (`scan facts --summary`). Untrusted text
// in any of them goes through render/escape.
package render

import (
	"fmt"
	"io"
	"strings"
)

// Renderer writes a document of kind D in one format.
type Renderer[D any] interface {
	// Format is the name a command line chooses it by.
	Format() string
	Render(w io.Writer, doc D) error
}

// Registry holds one kind's renderers.
type Registry[D any] struct {
	kind      string
	renderers []Renderer[D]
}

// NewRegistry starts a registry for a kind of document ("report", "diff",
// ...), which its errors name, holding rs.
func NewRegistry[D any](kind string, rs ...Renderer[D]) *Registry[D] {
	reg := &Registry[D]{kind: kind}
	for _, r := range rs {
		reg.Register(r)
	}
	return reg
}

// Register adds r. A second renderer for one format is a programming error.
func (reg *Registry[D]) Register(r Renderer[D]) {
	if _, err := reg.Lookup(r.Format()); err == nil {
		panic(fmt.Sprintf("render: two %s renderers for format %q", reg.kind, r.Format()))
	}
	reg.renderers = append(reg.renderers, r)
}

// Lookup returns the renderer for a format name.
func (reg *Registry[D]) Lookup(format string) (Renderer[D], error) {
	for _, r := range reg.renderers {
		if r.Format() == format {
			return r, nil
		}
	}
	return nil, fmt.Errorf("unknown %s format %q (want one of %s)", reg.kind, format, strings.Join(reg.Formats(), ", "))
}

// Formats lists the format names in the order they were registered, which
// is the order a command's help lists them in.
func (reg *Registry[D]) Formats() []string {
	out := make([]string, len(reg.renderers))
	for i, r := range reg.renderers {
		out[i] = r.Format()
	}
	return out
}

// Render writes doc in format.
func (reg *Registry[D]) Render(w io.Writer, doc D, format string) error {
	r, err := reg.Lookup(format)
	if err != nil {
		return err
	}
	return r.Render(w, doc)
}
