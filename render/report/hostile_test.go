package report_test

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/internal/testutil"
	policycatalog "github.com/gpuhost/gpuhost/policy/catalog"
	"github.com/gpuhost/gpuhost/policy/params"
	catalogdoc "github.com/gpuhost/gpuhost/render/catalog"
	"github.com/gpuhost/gpuhost/render/diff"
	"github.com/gpuhost/gpuhost/render/escape"
	"github.com/gpuhost/gpuhost/render/report"
	"github.com/gpuhost/gpuhost/reports"
)

// A document renderer under test: renders the document of its kind whose
// every piece of free text is text.
type textRenderer struct {
	name   string
	format string
	render func(w io.Writer, text string) error
}

// benign is the text a hostile entry is compared with: plain, and not an
// identifier either, so that it is shown as escaped text wherever an
// identifier would be shown as code.
const benign = "plain text"

// hostileReport is a report with a result of every status, a waiver, a lapsed
// waiver, findings, controls and a collector, its text all text. Severities
// and statuses stay real: they choose the sections a report has.
func hostileReport(text string) *reports.Report {
	w := &reports.Waiver{Justification: text, ApprovedBy: text, Expires: text, Target: text, Ticket: text,
		Scope: &reports.WaiverScope{Kinds: []string{text}, Hosts: []string{text}}, CVE: []string{text}}
	lapsed := *w
	lapsed.Expired = true
	var results []reports.Result
	for i, st := range []string{reports.StatusFail, reports.StatusFail, reports.StatusWaived, reports.StatusError, reports.StatusSkip, reports.StatusPass} {
		r := reports.Result{ID: fmt.Sprintf("%s %d", text, i), Title: text, Description: text,
			Severity: []string{"critical", "high"}[i%2], Status: st, Messages: []string{text, text},
			Remediation: text, Controls: map[string][]string{text: {text, text}}, Package: text, File: text,
			Findings: []reports.Finding{{Message: text, File: text, Line: 3, Subject: text}}}
		switch i {
		case 1:
			r.Waiver = &lapsed
		case 2:
			r.Waiver = w
		}
		results = append(results, r)
	}
	rep := &reports.Report{Schema: reports.Schema, Results: results,
		Target:      reports.Target{Kind: text, Ref: text, ScannedAt: text, Hostname: text},
		FactsDigest: text, PolicyDigest: text, ToolVersion: text,
		Collectors: map[string]reports.CollectorStatus{text: {Status: text, Reason: text}}}
	rep.Summarize()
	return rep
}

// reportDiff compares two reports of text whose results land in every
// category of a diff.
func reportDiff(text string) *diff.Diff {
	res := func(n int, sev, status string, w *reports.Waiver) reports.Result {
		return reports.Result{ID: fmt.Sprintf("%s %d", text, n), Title: text, Severity: sev, Status: status, Messages: []string{text, text}, Waiver: w}
	}
	w := &reports.Waiver{Justification: text, ApprovedBy: text, Expires: text, Target: text}
	lapsed := *w
	lapsed.Expired = true
	old := &reports.Report{Schema: reports.Schema, Target: reports.Target{Ref: text}, PolicyDigest: text + " old", Results: []reports.Result{
		res(1, "high", reports.StatusPass, nil), res(2, "high", reports.StatusFail, nil), res(3, "high", reports.StatusFail, nil),
		res(4, "high", reports.StatusFail, nil), res(5, "high", reports.StatusWaived, w), res(6, "low", reports.StatusPass, nil),
	}}
	new := &reports.Report{Schema: reports.Schema, Target: reports.Target{Ref: text}, PolicyDigest: text + " new", Results: []reports.Result{
		res(1, "high", reports.StatusFail, nil), res(2, "high", reports.StatusPass, nil), res(3, "critical", reports.StatusFail, nil),
		res(4, "high", reports.StatusWaived, w), res(5, "high", reports.StatusFail, &lapsed), res(7, "low", reports.StatusPass, nil),
	}}
	return diff.Compare(old, new, text+" old", text+" new")
}

// catalog is a pack of two checks whose metadata, controls and parameters
// are all text, as a hostile bundle could write them.
func catalog(text string) *policycatalog.Catalog {
	c := &policycatalog.Catalog{Params: map[string]any{text: text, "n": 3}}
	for i := range 2 {
		c.Entries = append(c.Entries, policycatalog.Entry{
			Check: engine.Check{ID: fmt.Sprintf("%s %d", text, i), Title: text, Description: text, Severity: "high",
				Remediation: text, Controls: map[string][]string{text: {text}, "nist-800-53": {text}},
				Targets: []string{text}, Requires: []string{text}, Judges: []string{text}, Package: text, File: text},
			Params: []string{text, params.All},
		})
	}
	return c
}

func renderers(t testing.TB) []textRenderer {
	t.Helper()
	var out []textRenderer
	for _, format := range []string{"markdown", "html"} {
		r, err := report.Lookup(format)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, textRenderer{"report", format, func(w io.Writer, text string) error { return r.Render(w, hostileReport(text)) }})
	}
	d, err := diff.Lookup("markdown")
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, textRenderer{"diff", "markdown", func(w io.Writer, text string) error { return d.Render(w, reportDiff(text)) }})
	for _, format := range []string{"markdown", "html"} {
		r, err := catalogdoc.Lookup(format)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, textRenderer{"catalog", format, func(w io.Writer, text string) error { return r.Render(w, catalog(text)) }})
	}
	return out
}

// TestHostileTextKeepsStructure renders every Markdown and HTML document
// with each entry of testutil.Hostile as all of its free text, and holds
// its structure to the same document's with benign text: in Markdown the
// same lines, each with as many unescaped table bars, code, emphasis, link
// and markup characters, and starting the same kind of block; in HTML the
// same elements with the same attributes, in the same order.
func TestHostileTextKeepsStructure(t *testing.T) {
	for _, r := range renderers(t) {
		t.Run(r.name+"."+r.format, func(t *testing.T) {
			want := r.shape(t, rendered(t, r, benign))
			for _, text := range testutil.Hostile {
				if got := r.shape(t, rendered(t, r, text)); !slices.Equal(got, want) {
					t.Errorf("text %.60q changes the structure:\n%s", text, firstDifference(got, want))
				}
			}
		})
	}
}

// FuzzHostileTextKeepsStructure is TestHostileTextKeepsStructure for any
// text.
func FuzzHostileTextKeepsStructure(f *testing.F) {
	for _, s := range testutil.Hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if strings.TrimSpace(escape.Markdown(text)) == "" {
			// Blank text leaves out what it would fill (a paragraph, a
			// line of metadata): a different document, not a broken one.
			return
		}
		for _, r := range renderers(t) {
			if got, want := r.shape(t, rendered(t, r, text)), r.shape(t, rendered(t, r, benign)); !slices.Equal(got, want) {
				t.Fatalf("%s %s: text %q changes the structure:\n%s", r.name, r.format, text, firstDifference(got, want))
			}
		}
	})
}

// shape is what of the document's structure the test compares.
func (r textRenderer) shape(t testing.TB, doc string) []string {
	if r.format == "html" {
		return htmlShape(t, doc)
	}
	return markdownShape(t, doc)
}

func rendered(t testing.TB, r textRenderer, text string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := r.render(&buf, text); err != nil {
		t.Fatalf("%s %s with %.60q: %v", r.name, r.format, text, err)
	}
	return buf.String()
}

func firstDifference(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d: got  %s\n       want %s", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("%d lines or tags, want %d", len(got), len(want))
}

// codeSpan is what escape.MarkdownCode writes verbatim: an identifier in
// backticks. Benign text is never one, so spans are taken out of both.
var codeSpan = regexp.MustCompile("`[A-Za-z0-9._:/@+=,-]+`")

// anchorLink is the destination of a link to a check's heading, which only
// the renderer writes (text cannot: its # is escaped) and whose characters
// are literal.
var anchorLink = regexp.MustCompile(`\(#[a-z0-9_-]*\)`)

// markdownStart names the block a line opens: a heading, list item, rule,
// quote, HTML block, fence, ordered item or table row; "text" otherwise.
var markdownStart = regexp.MustCompile("^(?:#+ |[-+*] |---|>|<[a-z!/]|~~~|```|[0-9]{1,9}[.)] |\\| |    )")

// markdownShape is, for each line, the block it starts and how many of each
// Markdown character it has that no backslash escapes.
func markdownShape(t testing.TB, doc string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(doc, "\n") {
		line = anchorLink.ReplaceAllString(codeSpan.ReplaceAllString(strings.ReplaceAll(line, "<br>", ""), ""), "()")
		start := markdownStart.FindString(line)
		if start == "" {
			start = "text"
		}
		counts := map[rune]int{}
		escaped := false
		for _, c := range line {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case strings.ContainsRune("|`*_[]~<>!#", c):
				counts[c]++
			}
		}
		var shape strings.Builder
		fmt.Fprintf(&shape, "%-6q", start)
		for _, c := range "|`*_[]~<>!#" {
			if counts[c] > 0 {
				fmt.Fprintf(&shape, " %c%d", c, counts[c])
			}
		}
		out = append(out, shape.String())
	}
	return out
}

// htmlShape is the document's tags in order, each with its attribute names.
func htmlShape(t testing.TB, doc string) []string {
	t.Helper()
	var out []string
	z := html.NewTokenizer(strings.NewReader(doc))
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatal(z.Err())
			}
			return out
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			tag := tt.String() + " " + tok.Data
			for _, a := range tok.Attr {
				tag += " " + a.Key
			}
			out = append(out, tag)
		case html.CommentToken, html.DoctypeToken:
			out = append(out, tt.String())
		}
	}
}
