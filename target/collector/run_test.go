package collector

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// fn is a collector made of a function, for testing the loop.
type fn struct {
	name  string
	needs []string
	run   func(f *facts.Facts) error
}

func (c fn) Name() string    { return c.name }
func (c fn) Needs() []string { return c.needs }
func (c fn) Collect(_ context.Context, _ *collect.Env, f *facts.Facts) error {
	return c.run(f)
}

func TestRunRecordsEveryOutcome(t *testing.T) {
	var ran []string
	mark := func(name string, err error) func(*facts.Facts) error {
		return func(*facts.Facts) error { ran = append(ran, name); return err }
	}
	cs := []Collector{
		fn{name: "late", needs: []string{"early"}, run: mark("late", nil)},
		fn{name: "early", run: mark("early", collect.Unavailable("no device"))},
		fn{name: "broken", run: func(*facts.Facts) error { panic("boom") }},
		fn{name: "bad", run: mark("bad", errors.New("unreadable /etc/x"))},
	}
	f := facts.New(facts.KindRootfs, "t", time.Unix(0, 0))
	if err := Run(context.Background(), &collect.Env{}, f, cs); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ran, ",") != "bad,early,late" {
		t.Errorf("ran %v, want bad, early, late (needs first, then by name)", ran)
	}
	want := map[string]string{"late": facts.StatusOK, "early": facts.StatusUnavailable, "broken": facts.StatusError, "bad": facts.StatusError}
	for name, status := range want {
		if got := f.Collectors[name].Status; got != status {
			t.Errorf("%s: status %q (%s), want %q", name, got, f.Collectors[name].Reason, status)
		}
	}
	if r := f.Collectors["broken"].Reason; !strings.Contains(r, "crashed: boom") {
		t.Errorf("a panic is recorded as %q, want it named", r)
	}
}

func TestRunStopsAtCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cs := []Collector{
		fn{name: "a", run: func(*facts.Facts) error { cancel(); return nil }},
		fn{name: "b", run: func(*facts.Facts) error { t.Error("b ran after the scan was cancelled"); return nil }},
	}
	f := facts.New(facts.KindHost, "t", time.Unix(0, 0))
	if err := Run(ctx, &collect.Env{}, f, cs); err != nil {
		t.Fatal(err)
	}
	if st := f.Collectors["b"]; st.Status != facts.StatusError || !strings.Contains(st.Reason, "cancelled") {
		t.Errorf("b after cancellation: %+v, want an error saying the scan was cancelled", st)
	}
}

func TestRunWithoutAnOrderRunsNothing(t *testing.T) {
	cs := []Collector{
		fn{name: "a", needs: []string{"missing"}, run: func(*facts.Facts) error { t.Error("a ran"); return nil }},
	}
	f := facts.New(facts.KindHost, "t", time.Unix(0, 0))
	if err := Run(context.Background(), &collect.Env{}, f, cs); err == nil {
		t.Fatal("a need on no collector: no error")
	}
	if f.Collectors["a"].Status != facts.StatusError {
		t.Errorf("a: %+v, want error", f.Collectors["a"])
	}
}

// A collector the scan's deadline leaves no time for is recorded as not
// judged, naming the deadline, never as a pass.
func TestRunNamesTheDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	cs := []Collector{fn{name: "late", run: func(*facts.Facts) error { t.Error("late ran past the deadline"); return nil }}}
	f := facts.New(facts.KindRootfs, "t", time.Unix(0, 0))
	if err := Run(ctx, &collect.Env{Budget: collect.Budget{Deadline: 5 * time.Minute}}, f, cs); err != nil {
		t.Fatal(err)
	}
	st := f.Collectors["late"]
	if st.Status != facts.StatusError || !strings.Contains(st.Reason, "deadline (5m0s) passed") {
		t.Errorf("late: %+v, want an error naming the deadline", st)
	}
}

// hog is a collector that holds size bytes until the scan's context ends,
// as a reader of a hostile file might.
type hog struct {
	size int
	held *[]byte
}

func (hog) Name() string    { return "hog" }
func (hog) Needs() []string { return nil }
func (h hog) Collect(ctx context.Context, _ *collect.Env, _ *facts.Facts) error {
	buf := make([]byte, h.size)
	for i := range buf {
		buf[i] = byte(i)
	}
	*h.held = buf
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return nil
	}
}

// The memory ceiling holds for the collection as a whole: the collector
// that crosses it is cut short and each one after it is not run, both
// recorded as errors naming the ceiling.
func TestRunNamesTheMemoryCeiling(t *testing.T) {
	var held []byte
	cs := []Collector{
		hog{size: 96 << 20, held: &held},
		fn{name: "later", needs: []string{"hog"}, run: func(*facts.Facts) error { t.Error("later ran past the ceiling"); return nil }},
	}
	f := facts.New(facts.KindRootfs, "t", time.Unix(0, 0))
	start := time.Now()
	if err := Run(context.Background(), &collect.Env{Budget: collect.Budget{Memory: 32 << 20}}, f, cs); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 20*time.Second {
		t.Errorf("the hog ran until its own end, not the ceiling")
	}
	for name, want := range map[string]string{"hog": "(32 MiB) was reached: the heap held", "later": "before this collector ran"} {
		st := f.Collectors[name]
		if st.Status != facts.StatusError || !strings.Contains(st.Reason, want) || !strings.Contains(st.Reason, "memory ceiling") {
			t.Errorf("%s: %+v, want an error naming the memory ceiling and %q", name, st, want)
		}
	}
	held = nil
}

// Garbage is not held memory: a collector that allocates far more than the
// ceiling in total, keeping little of it, runs to the end.
func TestRunCeilingCountsOnlyLiveMemory(t *testing.T) {
	var sink []byte
	churn := fn{name: "churn", run: func(*facts.Facts) error {
		for range 64 {
			sink = make([]byte, 4<<20)
			sink[len(sink)-1] = 1
		}
		return nil
	}}
	f := facts.New(facts.KindRootfs, "t", time.Unix(0, 0))
	if err := Run(context.Background(), &collect.Env{Budget: collect.Budget{Memory: 64 << 20}}, f, []Collector{churn}); err != nil {
		t.Fatal(err)
	}
	if st := f.Collectors["churn"]; st.Status != facts.StatusOK {
		t.Errorf("churn: %+v, want ok: 256 MiB allocated, 4 MiB held", st)
	}
	_ = sink
}
