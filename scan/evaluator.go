package scan

import (
	"context"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/reports"
)

// Evaluator judges one facts document with a compiled policy pack. The
// plain *engine.Engine is one, and is what a single scan and the Packer gate
// use; a fleet scan wraps it in engine/fleet's Memo, which answers the
// checks whose inputs it has seen and is held equal to the plain path by
// its tests.
type Evaluator interface {
	Evaluate(ctx context.Context, doc *engine.Document) ([]reports.Result, error)
	// Digest identifies the compiled pack and its parameters.
	Digest() string
}
