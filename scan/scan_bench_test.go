package scan

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"testing"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/engine/fleet"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/render/report"
)

// benchDocs are the two shapes measured: a hardened host (most checks pass)
// and the weak sample image (many fail, with messages to format).
var benchDocs = []string{"testdata/hardened-facts.json", "testdata/weak-facts.json"}

// benchScanner is the default pack's scanner: the plain engine, or with memo
// the fleet memo over it, as `scan facts` and the agent run.
func benchScanner(b *testing.B, memo bool) (*Scanner, []byte) {
	b.Helper()
	e, err := Pack{}.Engine(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var eval Evaluator = e
	if memo {
		eval = fleet.New(e, fleet.DefaultEntries)
	}
	data, err := os.ReadFile("testdata/hardened-facts.json")
	if err != nil {
		b.Fatal(err)
	}
	return New(eval), data
}

// BenchmarkEvaluate is the engine's figure: every check of the default pack
// against one parsed facts document, evaluated by OPA each time (no memo).
func BenchmarkEvaluate(b *testing.B) {
	sc, data := benchScanner(b, false)
	doc, err := engine.ParseDocument(data, "bench")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	measure(b, func() error { _, err := sc.eval.Evaluate(ctx, doc); return err })
}

// BenchmarkEvaluateFleet is the engine over a fleet of hosts built from one
// image: each document differs in its target, which no check reads, so every
// check's outcome comes from the memo.
func BenchmarkEvaluateFleet(b *testing.B) {
	sc, _ := benchScanner(b, true)
	ctx := context.Background()
	for _, file := range benchDocs {
		docs := fleetDocs(b, file, 64)
		i := 0
		stage(b, file, func() error {
			i++
			_, err := sc.eval.Evaluate(ctx, docs[i%len(docs)])
			return err
		})
	}
}

// fleetDocs parses n copies of a document, each with its own target.ref.
func fleetDocs(b *testing.B, file string, n int) []*engine.Document {
	b.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		b.Fatal(err)
	}
	out := make([]*engine.Document, n)
	for i := range out {
		m["target"].(map[string]any)["ref"] = "node-" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		raw, _ := json.Marshal(m)
		if out[i], err = engine.ParseDocument(raw, file); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// BenchmarkSavedDocument is what `scan facts` pays per document: parse,
// validate against the schema, evaluate, waive, summarize. The engine runs
// without its memo, so this is the cost of a host unlike any seen before.
func BenchmarkSavedDocument(b *testing.B) {
	sc, data := benchScanner(b, false)
	ctx := context.Background()
	measure(b, func() error {
		decoded, err := facts.DecodeJSON(data)
		if err != nil {
			return err
		}
		doc, err := engine.DocumentFromValue(decoded, "bench")
		if err != nil {
			return err
		}
		_, err = sc.Document(ctx, doc, data)
		return err
	})
}

// BenchmarkSavedDocumentParts splits a saved document's cost into its
// stages, with the memo on as `scan facts` runs.
func BenchmarkSavedDocumentParts(b *testing.B) {
	sc, _ := benchScanner(b, true)
	ctx := context.Background()
	for _, file := range benchDocs {
		data, err := os.ReadFile(file)
		if err != nil {
			b.Fatal(err)
		}
		decoded, err := facts.DecodeJSON(data)
		if err != nil {
			b.Fatal(err)
		}
		doc, err := engine.DocumentFromValue(decoded, "bench")
		if err != nil {
			b.Fatal(err)
		}
		rep, err := sc.Document(ctx, doc, data)
		if err != nil {
			b.Fatal(err)
		}
		stage(b, file+"/validate", func() error { _, err := facts.DecodeJSON(data); return err })
		stage(b, file+"/convert", func() error { _, err := engine.DocumentFromValue(decoded, "bench"); return err })
		stage(b, file+"/report", func() error { _, err := sc.Document(ctx, doc, data); return err })
		// As the NDJSON stream encodes: one encoder for the whole fleet.
		lines := report.NewLineEncoder()
		stage(b, file+"/encode", func() error { _, err := lines.Append(nil, rep); return err })
	}
}

// stage benchmarks one step of the pipeline as a sub-benchmark.
func stage(b *testing.B, name string, step func() error) {
	b.Run(name, func(b *testing.B) { measure(b, step) })
}

// measure runs step b.N times, reporting allocations and CPU time per op.
func measure(b *testing.B, step func() error) {
	b.ReportAllocs()
	reportCPU(b, func() {
		for b.Loop() {
			if err := step(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDriftLargeInventory evaluates the whole pack, memo off, against a
// host of 1,500 packages with its 1,500-package baseline, one package
// drifted: the drift checks must stay linear in the inventory (a rule
// looked up by a bound key inside a loop once made this 1,500 x 1,500).
func BenchmarkDriftLargeInventory(b *testing.B) {
	sc, data := benchScanner(b, false)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		b.Fatal(err)
	}
	live := make([]any, 1500)
	baked := make([]any, 1500)
	for i := range live {
		p := map[string]any{"name": fmt.Sprintf("pkg%04d", i), "version": fmt.Sprintf("1.%d-1", i), "arch": "amd64", "held": i%100 == 0}
		baked[i] = maps.Clone(p)
		if i == 700 {
			p["version"] = "1.700-1+drift"
		}
		live[i] = p
	}
	m["packages"] = live
	m["manifest"] = map[string]any{"schema": "gpuhost.manifest/v1", "pins": map[string]any{"packages": []any{}, "ngc_images": []any{}},
		"packages": baked, "build": map[string]any{"plugin_version": "bench", "time": "2025-02-01T00:00:00Z"}}
	m["collectors"].(map[string]any)["manifest"] = map[string]any{"status": "ok"}
	raw, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	doc, err := engine.ParseDocument(raw, "bench")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	res, err := sc.eval.Evaluate(ctx, doc)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range res {
		if r.ID == "GH-DRIFT-001" && (r.Status != "fail" || len(r.Messages) != 1) {
			b.Fatalf("GH-DRIFT-001: %s %q, want the one drifted package", r.Status, r.Messages)
		}
	}
	measure(b, func() error { _, err := sc.eval.Evaluate(ctx, doc); return err })
}
