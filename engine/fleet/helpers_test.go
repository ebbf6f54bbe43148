package fleet

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/reports"
)

// evaluator is what the tests compare: the plain engine, or a Memo over it.
type evaluator interface {
	Evaluate(ctx context.Context, doc *engine.Document) ([]reports.Result, error)
}

// compile compiles the given policy files into a plain engine.
func compile(t testing.TB, files map[string]string, opts ...engine.Option) *engine.Engine {
	t.Helper()
	fsys := fstest.MapFS{}
	for k, v := range files {
		fsys[k] = &fstest.MapFile{Data: []byte(v)}
	}
	src, err := engine.LoadFS(fsys, "test")
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(context.Background(), append([]engine.Option{engine.WithSource(src)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// memoEngine is a Memo of entries outcomes over the given policy files.
func memoEngine(t testing.TB, entries int, files map[string]string) *Memo {
	t.Helper()
	return New(compile(t, files), entries)
}

func doc(t testing.TB, js string) *engine.Document {
	t.Helper()
	d, err := engine.ParseDocument([]byte(js), "test")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustEval(t testing.TB, e evaluator, d *engine.Document) []reports.Result {
	t.Helper()
	rs, err := e.Evaluate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}
