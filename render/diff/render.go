package diff

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/gpuhost/gpuhost/render"
	"github.com/gpuhost/gpuhost/render/escape"
)

// Renderer writes a diff in one format. Implementations live one per file.
type Renderer = render.Renderer[*Diff]

// registry holds the diff formats, in the order help text lists them.
var registry = render.NewRegistry[*Diff]("diff", tableRenderer{}, markdownRenderer{}, jsonRenderer{})

// Lookup returns the renderer for a format name.
func Lookup(format string) (Renderer, error) { return registry.Lookup(format) }

// Formats lists the format names.
func Formats() []string { return registry.Formats() }

// transition shows how a value moved: "fail -> pass", or just one side when
// the check is only in one report.
func transition(from, to string) string { return transitionWith(from, to, " -> ", plain) }

func transitionWith(from, to, arrow string, esc func(string) string) string {
	switch {
	case from == "":
		return esc(to)
	case to == "", from == to:
		return esc(from)
	}
	return esc(from) + arrow + esc(to)
}

func (c Change) detail() string {
	var parts []string
	if c.Waiver != nil {
		w := c.Waiver
		state := "waiver"
		if w.Expired {
			state = "lapsed waiver"
		}
		parts = append(parts, fmt.Sprintf("%s by %s until %s: %s", state, w.ApprovedBy, w.Expires, w.Justification))
	}
	if len(c.Messages) > 0 {
		m := c.Messages[0]
		if len(c.Messages) > 1 {
			m += fmt.Sprintf(" (+%d more)", len(c.Messages)-1)
		}
		parts = append(parts, m)
	}
	return strings.Join(parts, "; ")
}

// plain is report text for a terminal, shortened: reports are untrusted,
// and a message carrying escape sequences must not drive the reader's
// terminal.
func plain(s string) string {
	s = escape.Terminal(strings.ReplaceAll(s, string(unicode.ReplacementChar), ""))
	const max = 160
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

func (d *Diff) header(arrow string, esc func(string) string) string {
	return fmt.Sprintf("%s (%s)%s%s (%s)",
		esc(d.Old.File), esc(d.Old.Target.Ref), arrow, esc(d.New.File), esc(d.New.Target.Ref))
}

func (d *Diff) counts() string {
	var parts []string
	for _, l := range d.lists() {
		parts = append(parts, fmt.Sprintf("%d %s", len(*l.changes), strings.ToLower(l.title)))
	}
	return strings.Join(parts, ", ")
}
