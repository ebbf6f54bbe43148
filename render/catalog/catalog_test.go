package catalog

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/policy/bundle"
	policycatalog "github.com/gpuhost/gpuhost/policy/catalog"
	"github.com/gpuhost/gpuhost/scan"
)

var update = flag.Bool("update", false, "rewrite docs/policies.md from the default pack, and testdata/golden")

// committed is the default pack's catalog, checked into the repository.
const committed = "../../docs/policies.md"

func defaultPack(t *testing.T) *policycatalog.Catalog {
	t.Helper()
	e, err := scan.Pack{}.Engine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return policycatalog.New(e)
}

func rendered(t *testing.T, c *policycatalog.Catalog, format string) string {
	t.Helper()
	r, err := Lookup(format)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.Render(&buf, c); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestCommittedCatalogIsCurrent fails when a policy changed and
// docs/policies.md was not regenerated: go test ./render/catalog -update.
func TestCommittedCatalogIsCurrent(t *testing.T) {
	testutil.Golden(t, committed, []byte(rendered(t, defaultPack(t), "markdown")), *update)
}

// hostileRego is a check whose metadata a hostile bundle author wrote:
// markup, a script, a Markdown link and image, pipes that would split a
// table, a fence that would swallow the rest of the page.
const hostileRego = `# METADATA
# title: "<script>alert(1)</script> | pipe [x](javascript:alert(1))"
# description: "~~~ opens a fence\n<img src=x onerror=alert(1)> | more\n\n# not a heading\n| a | b |"
# custom:
#   id: EX-001
#   severity: high
#   remediation: "run ` + "`rm`" + ` <b>now</b> ![p](http://attacker.invalid/p.png)"
#   controls:
#     nist-800-53: [SC-13, SC-8, "CM-7(1)", CM-7, "a|b"]
#     cis-ubuntu-22.04: ["1.2.10", "1.2.9"]
#   targets: [rootfs]
#   requires: [ssh]
package gpuhost.ex.one

deny contains "x" if data.gpuhost.params.knob
`

// hostile is the catalog of a signed-off OPA bundle holding hostileRego,
// loaded as a scan loads --policy BUNDLE.tar.gz.
func hostile(t *testing.T) *policycatalog.Catalog {
	t.Helper()
	pack := fstest.MapFS{
		"one.rego":            {Data: []byte(hostileRego)},
		"params.default.yaml": {Data: []byte("knob: \"<b>|\"\nunused: 3\n")},
	}
	file := filepath.Join(t.TempDir(), "hostile.tar.gz")
	var buf bytes.Buffer
	if err := bundle.Write(&buf, pack, "hostile", bundle.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := engine.LoadPath(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(context.Background(), engine.WithSource(src))
	if err != nil {
		t.Fatal(err)
	}
	return policycatalog.New(e)
}

// unescapedLink is "](" not preceded by a backslash: a Markdown link or
// image. The one link the catalog makes itself, to a check's anchor, is
// "](#".
var unescapedLink = regexp.MustCompile(`(^|[^\\])\]\([^#]`)

func TestGolden(t *testing.T) {
	cat := hostile(t)
	for _, format := range Formats() {
		testutil.Golden(t, filepath.Join("testdata", "golden", "hostile."+format), []byte(rendered(t, cat, format)), *update)
	}
}

// The Markdown of a hostile bundle escapes its text: no raw HTML, no link,
// no row split, no block the text opens.
func TestMarkdownEscapesBundleText(t *testing.T) {
	out := rendered(t, hostile(t), "markdown")
	for _, bad := range []string{"<script>", "<img", "<b>", "\n~~~", "\n# not"} {
		if strings.Contains(out, bad) {
			t.Errorf("markdown carries %q from the bundle:\n%s", bad, out)
		}
	}
	if link := unescapedLink.FindString(out); link != "" {
		t.Errorf("markdown carries a link from the bundle, %q:\n%s", link, out)
	}
	for _, want := range []string{
		"| [EX-001](#ex-001) | high | &lt;script&gt;alert(1)&lt;/script&gt; \\| pipe \\[x\\](javascript:alert(1)) | rootfs |",
		"\n\\~\\~\\~ opens a fence &lt;img src=x onerror=alert(1)&gt; \\| more \\# not a heading \\| a \\| b \\|\n",
		"**Remediation:** run \\`rm\\` &lt;b&gt;now&lt;/b&gt; \\!\\[p\\](http://attacker.invalid/p.png)\n",
		"| Parameters | `knob` |",
		"| Collectors | `ssh` |",
		"| `knob` | \"&lt;b&gt;\\|\" | EX-001 |",
		"| `unused` | `3` | none |",
		"| CM-7 | ✓ |", "| 1.2.10 | ✓ |", "| a\\|b | ✓ |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	// Controls sort as people read them.
	if i, j, k := strings.Index(out, "| CM-7(1) |"), strings.Index(out, "| SC-8 |"), strings.Index(out, "| SC-13 |"); i < 0 || j < 0 || i > j || j > k {
		t.Errorf("controls out of order:\n%s", out)
	}
	if strings.Index(out, "| 1.2.9 |") > strings.Index(out, "| 1.2.10 |") {
		t.Error("1.2.10 sorts before 1.2.9")
	}
}

func TestHTMLSelfContained(t *testing.T) {
	for name, cat := range map[string]*policycatalog.Catalog{"default": defaultPack(t), "hostile": hostile(t)} {
		out := rendered(t, cat, "html")
		for _, bad := range []string{`"http://`, `"https://`, "<script", "<link", "<img", "url("} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: HTML contains %q", name, bad)
			}
		}
		if !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, "<style>") || !strings.Contains(out, "✓") {
			t.Errorf("%s: not a complete page with a matrix", name)
		}
		// A browser runs nothing and loads nothing the page did not
		// inline, should an escape ever slip.
		if !strings.Contains(out, `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`) {
			t.Errorf("%s: no Content-Security-Policy that forbids scripts", name)
		}
		if name == "hostile" && !strings.Contains(out, "&lt;script&gt;") {
			t.Error("the hostile title is not escaped")
		}
	}
	if _, err := Lookup("pdf"); err == nil {
		t.Error("Lookup accepted an unknown format")
	}
}
