package collector

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
)

// fn is a collector made of a function, for testing the loop.
type fn struct {
	name  string
	needs []string
	run   func(f *facts.Facts) error
}

func (c fn) Name() string    { return c.name }
func (c fn) Needs() []string { return c.needs }
func (c fn) Collect(_ context.Context, _ *Env, f *facts.Facts) error {
	return c.run(f)
}

func TestRunRecordsEveryOutcome(t *testing.T) {
	var ran []string
	mark := func(name string, err error) func(*facts.Facts) error {
		return func(*facts.Facts) error { ran = append(ran, name); return err }
	}
	cs := []Collector{
		fn{name: "late", needs: []string{"early"}, run: mark("late", nil)},
		fn{name: "early", run: mark("early", Unavailable("no device"))},
		fn{name: "broken", run: func(*facts.Facts) error { panic("boom") }},
		fn{name: "bad", run: mark("bad", errors.New("unreadable /etc/x"))},
	}
	f := facts.New(facts.KindRootfs, "t", time.Unix(0, 0))
	if err := Run(context.Background(), &Env{}, f, cs); err != nil {
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
	if err := Run(ctx, &Env{}, f, cs); err != nil {
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
	if err := Run(context.Background(), &Env{}, f, cs); err == nil {
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
	if err := Run(ctx, &Env{Budget: Budget{Deadline: 5 * time.Minute}}, f, cs); err != nil {
		t.Fatal(err)
	}
	st := f.Collectors["late"]
	if st.Status != facts.StatusError || !strings.Contains(st.Reason, "deadline (5m0s) passed") {
		t.Errorf("late: %+v, want an error naming the deadline", st)
	}
}

func TestBudgetDefaults(t *testing.T) {
	if got := (Budget{KDFTime: time.Second}).WithDefaults(); got.Deadline != DefaultBudget.Deadline || got.KDFTime != time.Second || got.KDFMemory != DefaultBudget.KDFMemory {
		t.Errorf("WithDefaults: %+v", got)
	}
}
