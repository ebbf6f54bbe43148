// Package collector runs the collectors that fill a facts document: it
// orders them by what they need, runs each under the scan's one budget, and
// records every outcome. Collectors live in sibling packages and satisfy
// Collector structurally; what they are given, and the outcomes they may
// answer besides their facts, are package collect's.
package collector

import (
	"context"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// Collector fills the top-level keys it owns. It returns nil when it
// collected, an *collect.Outcome for unavailable or not_applicable, and any
// other error when what it read could not be trusted.
type Collector interface {
	Name() string
	// Needs names the collectors whose facts Collect reads, or adds to:
	// they run before it (see Order). A collector must not read what a
	// collector it does not name has filled, since nothing else puts that
	// one first.
	Needs() []string
	Collect(ctx context.Context, env *collect.Env, f *facts.Facts) error
}
