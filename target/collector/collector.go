// Package collector runs the collectors that fill a facts document: it
// orders them by what they need, runs each under the scan's one budget, and
// records every outcome. The collectors are package domains' (a Func per
// domain's collect function) and the scan commands' own, such as the
// vulnerability matching; what they are given, and the outcomes they may
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

// Func is a collector made of a function: the loop's side of a domain
// whose collect function returns its own facts and knows nothing of the
// document. Fill calls it with what it reads from f and puts what it
// returns where the document keeps it.
type Func struct {
	// ID is the collector's name, as checks require it and
	// f.Collectors records it.
	ID string
	// Deps names the collectors whose facts Fill reads (Needs).
	Deps []string
	Fill func(ctx context.Context, env *collect.Env, f *facts.Facts) error
}

// Name is c.ID.
func (c Func) Name() string { return c.ID }

// Needs is c.Deps.
func (c Func) Needs() []string { return c.Deps }

// Collect runs c.Fill.
func (c Func) Collect(ctx context.Context, env *collect.Env, f *facts.Facts) error {
	return c.Fill(ctx, env, f)
}
