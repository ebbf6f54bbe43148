package collector

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"time"
)

// The heap as the runtime counts it: liveMetric is what its last garbage
// collection found reachable, objectsMetric what it holds now, garbage
// included.
const (
	liveMetric    = "/gc/heap/live:bytes"
	objectsMetric = "/memory/classes/heap/objects:bytes"
)

const (
	// memoryPoll is how often the watch reads the heap.
	memoryPoll = 10 * time.Millisecond
	// forcedGCGap spaces the collections the watch forces to confirm a
	// heap over the ceiling: a collector churning garbage must not be
	// made to collect nonstop.
	forcedGCGap = 250 * time.Millisecond
)

// CeilingError is the cause of a collection stopped at the budget's memory
// ceiling.
type CeilingError struct {
	// Limit is collect.Budget.Memory; Heap what the heap held, after a collection,
	// when it was found over.
	Limit, Heap int64
}

func (e *CeilingError) Error() string {
	return fmt.Sprintf("the scan's memory ceiling (%s) was reached: the heap held %s", mib(e.Limit), mib(e.Heap))
}

func mib(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

// memoryWatch cancels a collection, with a *CeilingError as the cause,
// once the process's heap holds more than limit after a garbage
// collection. The heap is the whole process's, which is what the operator's
// machine pays for: a scan holds little besides what its collectors read.
// It reads the heap every memoryPoll and whenever Run asks between
// collectors, so a collection shorter than one poll is judged too.
type memoryWatch struct {
	limit  int64
	cancel context.CancelCauseFunc
	done   chan struct{}
	exited chan struct{}

	mu     sync.Mutex
	sample []metrics.Sample
	lastGC time.Time
}

// watchMemory starts a watch of ctx's collection; a limit of zero or less
// watches nothing. stop ends the watch.
func watchMemory(ctx context.Context, limit int64) (_ context.Context, w *memoryWatch, stop func()) {
	if limit <= 0 {
		return ctx, nil, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	w = &memoryWatch{
		limit: limit, cancel: cancel, done: make(chan struct{}), exited: make(chan struct{}),
		sample: []metrics.Sample{{Name: liveMetric}, {Name: objectsMetric}},
	}
	go w.poll(ctx)
	return ctx, w, func() {
		close(w.done)
		<-w.exited
		cancel(nil)
	}
}

func (w *memoryWatch) poll(ctx context.Context) {
	defer close(w.exited)
	tick := time.NewTicker(memoryPoll)
	defer tick.Stop()
	for !w.over() {
		select {
		case <-w.done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// over reads the heap, cancels the collection when it is over the limit,
// and says whether it was. A nil watch is never over.
func (w *memoryWatch) over() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	live, objects := readHeap(w.sample)
	// Garbage not yet collected is no one's memory: only what a
	// collection finds reachable counts against the ceiling, and the
	// last one may have run before what it found was let go.
	if (live > w.limit || objects > w.limit) && time.Since(w.lastGC) >= forcedGCGap {
		runtime.GC()
		w.lastGC = time.Now()
		live, _ = readHeap(w.sample)
	}
	if live <= w.limit {
		return false
	}
	w.cancel(&CeilingError{Limit: w.limit, Heap: live})
	return true
}

// readHeap returns the live and the whole heap; a metric this runtime
// does not have reads as zero, which never trips the ceiling.
func readHeap(s []metrics.Sample) (live, objects int64) {
	metrics.Read(s)
	v := func(i int) int64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(s[i].Value.Uint64())
	}
	return v(0), v(1)
}
