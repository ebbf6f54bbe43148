package catalog

import (
	"bytes"
	"context"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/scan"
)

var update = flag.Bool("update", false, "rewrite docs/policies.md from the default pack")

// committed is the default pack's catalog, checked into the repository.
const committed = "../../docs/policies.md"

func defaultPack(t *testing.T) *Catalog {
	t.Helper()
	e, err := scan.Pack{}.Engine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return New(e)
}

// TestCommittedCatalogIsCurrent fails when a policy changed and
// docs/policies.md was not regenerated: go test ./policy/catalog -update.
func TestCommittedCatalogIsCurrent(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, defaultPack(t), "markdown"); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(committed, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(committed)
	if err != nil {
		t.Fatalf("%v (run go test ./policy/catalog -update)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s is stale: the default pack renders differently; run go test ./policy/catalog -update and commit it", committed)
	}
}

// Every check of the default pack must be reviewable: an id, a severity, a
// remediation and at least one compliance control.
func TestDefaultPackIsComplete(t *testing.T) {
	cat := defaultPack(t)
	if len(cat.Entries) < 10 {
		t.Fatalf("only %d checks in the default pack", len(cat.Entries))
	}
	for _, p := range cat.Problems() {
		t.Error(p)
	}
	// The catalog must find what the SSH cipher check reads.
	for _, e := range cat.Entries {
		if e.ID == "GH-SSH-004" && !slices.Contains(e.Params, "ssh_weak_ciphers") {
			t.Errorf("GH-SSH-004 params = %v, want ssh_weak_ciphers among them", e.Params)
		}
	}
}

func TestProblems(t *testing.T) {
	cat := &Catalog{Entries: []Entry{
		{Check: engine.Check{ID: "A", Severity: "low", Remediation: "r", Controls: map[string][]string{"nist-800-53": {"CM-6"}}}},
		{Check: engine.Check{File: "b.rego", Controls: map[string][]string{"nist-800-53": {}}}},
	}}
	got := cat.Problems()
	want := []string{"b.rego: no id", "b.rego: no severity", "b.rego: no remediation", "b.rego: no compliance control"}
	if !slices.Equal(got, want) {
		t.Errorf("Problems = %q, want %q", got, want)
	}
}

func hostile(t *testing.T) *Catalog {
	t.Helper()
	rego := `# METADATA
# title: "<script>alert(1)</script> | pipe"
# description: "desc <img src=x onerror=alert(1)> | more"
# custom:
#   id: EX-001
#   severity: high
#   remediation: "run ` + "`rm`" + ` <b>now</b>"
#   controls:
#     nist-800-53: [SC-13, SC-8, "CM-7(1)", CM-7]
#     cis-ubuntu-22.04: ["1.2.10", "1.2.9"]
#   targets: [rootfs]
#   requires: [ssh]
package gpuhost.ex.one

deny contains "x" if data.gpuhost.params.knob
`
	src, err := engine.LoadFS(fstest.MapFS{"one.rego": {Data: []byte(rego)}, "params.default.yaml": {Data: []byte("knob: \"<b>\"\nunused: 3\n")}}, "hostile")
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(context.Background(), engine.WithSource(src))
	if err != nil {
		t.Fatal(err)
	}
	return New(e)
}

func TestRenderMarkdown(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, hostile(t), "markdown"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, bad := range []string{"<script>", "<img", "<b>now"} {
		if strings.Contains(out, bad) {
			t.Errorf("markdown carries raw HTML %q from the pack", bad)
		}
	}
	for _, want := range []string{
		"| [EX-001](#ex-001) | high |",
		"| Parameters | `knob` |",
		"| Collectors | `ssh` |",
		"| `knob` | \"&lt;b&gt;\" | EX-001 |",
		"| `unused` | `3` | none |",
		"| CM-7 | ✓ |", "| 1.2.10 | ✓ |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	// Controls sort as people read them.
	if i, j := strings.Index(out, "| CM-7(1) |"), strings.Index(out, "| SC-8 |"); i < 0 || j < 0 || i > j || strings.Index(out, "| SC-8 |") > strings.Index(out, "| SC-13 |") {
		t.Errorf("controls out of order:\n%s", out)
	}
	if strings.Index(out, "| 1.2.9 |") > strings.Index(out, "| 1.2.10 |") {
		t.Error("1.2.10 sorts before 1.2.9")
	}
}

func TestRenderHTMLSelfContained(t *testing.T) {
	for name, cat := range map[string]*Catalog{"default": defaultPack(t), "hostile": hostile(t)} {
		var buf bytes.Buffer
		if err := Render(&buf, cat, "html"); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, bad := range []string{"http://", "https://", "<script", "<link", "<img", "url("} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: HTML contains %q", name, bad)
			}
		}
		if !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, "<style>") || !strings.Contains(out, "✓") {
			t.Errorf("%s: not a complete page with a matrix", name)
		}
		if name == "hostile" && !strings.Contains(out, "&lt;script&gt;") {
			t.Error("the hostile title is not escaped")
		}
	}
	if err := Render(&bytes.Buffer{}, &Catalog{}, "pdf"); err == nil {
		t.Error("Render accepted an unknown format")
	}
}

func TestNaturalCompare(t *testing.T) {
	got := []string{"SC-13", "CM-7(1)", "SC-8", "1.2.10", "CM-7", "1.2.9", "AC-2", "5.2.14"}
	slices.SortFunc(got, naturalCompare)
	want := []string{"1.2.9", "1.2.10", "5.2.14", "AC-2", "CM-7", "CM-7(1)", "SC-8", "SC-13"}
	if !slices.Equal(got, want) {
		t.Errorf("sorted %v, want %v", got, want)
	}
}
