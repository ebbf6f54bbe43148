package scan

import (
	"context"
	"os"
	"testing"

	"github.com/gpuhost/gpuhost/checks/facts"
	"github.com/gpuhost/gpuhost/internal/engine"
	"github.com/gpuhost/gpuhost/policies"
)

func benchScanner(b *testing.B) (*Scanner, []byte) {
	b.Helper()
	src, err := engine.LoadFS(policies.FS, "embedded")
	if err != nil {
		b.Fatal(err)
	}
	e, err := engine.New(context.Background(), engine.WithSource(src))
	if err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile("testdata/hardened-facts.json")
	if err != nil {
		b.Fatal(err)
	}
	return New(e), data
}

// BenchmarkEvaluate is the engine's figure: every check of the default pack
// against one parsed facts document.
func BenchmarkEvaluate(b *testing.B) {
	sc, data := benchScanner(b)
	doc, err := engine.ParseDocument(data, "bench")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sc.engine.Evaluate(ctx, doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSavedDocument is what `scan facts` pays per document: parse,
// validate against the schema, evaluate, waive, summarize.
func BenchmarkSavedDocument(b *testing.B) {
	sc, data := benchScanner(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		decoded, err := facts.DecodeJSON(data)
		if err != nil {
			b.Fatal(err)
		}
		doc, err := engine.DocumentFromValue(decoded, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sc.Document(ctx, doc, data); err != nil {
			b.Fatal(err)
		}
	}
}
