package collector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// Run is the one loop that fills a document: it orders cs (Order), runs each
// collector over env into f, and records its outcome in f.Collectors. A
// collector that panics is recorded as an error, and so is every collector
// left once ctx is done: nothing it would have shown can pass. When cs has
// no order, none runs, every one is recorded as an error, and Run returns
// the ordering error. The scan and the collectors' tests both run
// collectors through it, so a test sees what a scan would.
func Run(ctx context.Context, env *collect.Env, f *facts.Facts, cs []Collector) error {
	log := env.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ordered, err := Order(cs)
	if err != nil {
		for _, c := range cs {
			f.Record(c.Name(), facts.StatusError, err.Error())
		}
		return err
	}
	ctx, watch, stop := watchMemory(ctx, env.Budget.Memory)
	defer stop()
	for _, c := range ordered {
		if watch.over() || ctx.Err() != nil {
			f.Record(c.Name(), facts.StatusError, notRun(ctx, env.Budget))
			continue
		}
		start := time.Now()
		status, reason := collect.Classify(runOne(ctx, c, env, f, log))
		// A collector the ceiling caught may still have returned cleanly
		// (not every read watches its context): what it found is cut
		// short all the same.
		var ceiling *CeilingError
		if watch.over(); errors.As(context.Cause(ctx), &ceiling) {
			status, reason = facts.StatusError, "not judged: "+ceiling.Error()+" while this collector ran"
		}
		f.Record(c.Name(), status, reason)
		log.Debug("collector done", "collector", c.Name(), "status", status, "reason", reason, "took", time.Since(start))
	}
	return nil
}

// notRun says why a collector was never started once ctx is done: the
// scan's deadline, its memory ceiling, or the caller's cancellation.
func notRun(ctx context.Context, b collect.Budget) string {
	var ceiling *CeilingError
	switch cause := context.Cause(ctx); {
	case errors.As(cause, &ceiling):
		return "not judged: " + ceiling.Error() + " before this collector ran"
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("not judged: the scan's deadline (%v) passed before this collector ran", b.Deadline)
	default:
		return "scan cancelled: " + ctx.Err().Error()
	}
}

// runOne turns a collector's panic into an error: one broken collector must
// not take the whole scan down, nor be mistaken for a clean result.
func runOne(ctx context.Context, c Collector, env *collect.Env, f *facts.Facts, log *slog.Logger) (err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("collector panicked", "collector", c.Name(), "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("collector %s crashed: %v", c.Name(), p)
		}
	}()
	return c.Collect(ctx, env, f)
}
