package fleet

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/gpuhost/gpuhost/engine"
)

// FuzzDigestAgrees feeds untrusted JSON through both ways a document reaches
// the engine: parsed straight to AST (collected facts) and decoded to Go
// values (saved facts). Any value both accept must digest alike, or the memo
// would answer one kind of document with the other's outcomes for a
// different value, or never share them at all; neither may panic.
// fuzzItems reads the fuzzed value every way a check can.
var fuzzItems = func() []readItem {
	var out []readItem
	paths := [][]step{
		{{key: "x"}}, {{key: "x"}, {key: "a"}}, {{key: "missing"}},
		{{key: "x"}, {each: true}}, {{key: "x"}, {each: true}, {key: "c"}},
		{{key: "x"}, {each: true}, {each: true}},
	}
	for _, p := range paths {
		for _, m := range []readMode{readPresence, readLength, readValue} {
			out = append(out, readItem{path: p, mode: m})
		}
	}
	return out
}()

func FuzzDigestAgrees(f *testing.F) {
	for _, s := range []string{
		`null`, `true`, `1`, `1.0`, `-0`, `1e3`, `"a"`, `"\u00e9"`, `"\ud83d\ude00"`, `[]`, `{}`,
		`{"b":1,"a":[2,{"c":null}]}`, `["a","b"]`, `["ab"]`, `{"":""}`, `[[[[[]]]]]`, `"\xff"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		raw := append(append([]byte(`{"schema":"gpuhost.facts/v1","target":{"kind":"host"},"collectors":{},"x":`), value...), '}')
		fromAST, err := engine.ParseDocument(raw, "fuzz")
		if err != nil {
			return
		}
		var decoded any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&decoded); err != nil {
			t.Fatalf("OPA parsed %q, encoding/json did not: %v", raw, err)
		}
		fromJSON, err := engine.DocumentFromValue(decoded, "fuzz")
		if err != nil {
			t.Fatalf("DocumentFromValue refused what ParseDocument took: %v", err)
		}
		a, b := newItemDigests(fromAST, fuzzItems, nil), newItemDigests(fromJSON, fuzzItems, nil)
		for id, it := range fuzzItems {
			okA, okB := a.digest(id), b.digest(id)
			if okA != okB || a.sums[id] != b.sums[id] {
				t.Fatalf("item %v of %q: AST digest (%v) and JSON digest (%v) differ", it, value, okA, okB)
			}
		}
		// The lazily converted input must be the AST the parser made.
		input, err := fromJSON.Input()
		if err != nil {
			t.Fatalf("converting %q: %v", raw, err)
		}
		if input.Compare(fromAST.Value) != 0 {
			t.Fatalf("converted input %v, parsed %v", input, fromAST.Value)
		}
	})
}
