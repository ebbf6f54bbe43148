package scan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// counter hands out 0..n-1 and then io.EOF, and tracks how many it has
// handed out.
type counter struct {
	n, read int
}

func (c *counter) next() (int, error) {
	if c.read == c.n {
		return 0, io.EOF
	}
	c.read++
	return c.read - 1, nil
}

func TestOrderedKeepsInputOrder(t *testing.T) {
	c := &counter{n: 2000}
	var got []int
	work := func(_ context.Context, i int) (int, error) {
		time.Sleep(time.Duration(rand.IntN(50)) * time.Microsecond)
		return i * 2, nil
	}
	err := Ordered(context.Background(), 8, 32, c.next, work, func(v int) error { got = append(got, v); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != c.n {
		t.Fatalf("emitted %d of %d", len(got), c.n)
	}
	for i, v := range got {
		if v != 2*i {
			t.Fatalf("output %d is %d; want %d (out of order)", i, v, 2*i)
		}
	}
}

// TestOrderedBoundsTheWindow: one slow input ahead of many fast ones holds
// reading back, instead of queueing every output behind it.
func TestOrderedBoundsTheWindow(t *testing.T) {
	const window = 16
	var read, emitted, most atomic.Int64
	c := &counter{n: 20000}
	next := func() (int, error) {
		i, err := c.next()
		if err == nil {
			most.Store(max(most.Load(), read.Add(1)-emitted.Load()))
		}
		return i, err
	}
	work := func(_ context.Context, i int) (int, error) {
		if i == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		return i, nil
	}
	err := Ordered(context.Background(), 4, window, next, work, func(int) error { emitted.Add(1); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if m := most.Load(); m > window {
		t.Errorf("%d inputs were read and not emitted at once; the window is %d", m, window)
	}
	if emitted.Load() != int64(c.n) {
		t.Errorf("emitted %d of %d", emitted.Load(), c.n)
	}
}

func TestOrderedStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name        string
		readFail    int // next fails at this input; -1 never
		workFail    int
		emitFail    int
		wantEmitted int
	}{
		{"work", -1, 5, -1, 5},
		{"emit", -1, -1, 7, 7},
		{"read", 9, -1, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			c := &counter{n: 1000}
			next := func() (int, error) {
				if c.read == tc.readFail {
					return 0, boom
				}
				return c.next()
			}
			work := func(_ context.Context, i int) (int, error) {
				if i == tc.workFail {
					return 0, boom
				}
				return i, nil
			}
			emitted := 0
			emit := func(i int) error {
				if i == tc.emitFail {
					return boom
				}
				emitted++
				return nil
			}
			err := Ordered(context.Background(), 4, 8, next, work, emit)
			if !errors.Is(err, boom) {
				t.Fatalf("Ordered = %v; want boom", err)
			}
			if tc.wantEmitted >= 0 && emitted != tc.wantEmitted {
				t.Errorf("emitted %d; want the %d ahead of the failure", emitted, tc.wantEmitted)
			}
			if tc.readFail >= 0 && emitted > tc.readFail {
				t.Errorf("emitted %d; at most %d were read", emitted, tc.readFail)
			}
			// Every goroutine Ordered started has ended.
			time.Sleep(10 * time.Millisecond)
			if n := runtime.NumGoroutine(); n > before {
				t.Errorf("%d goroutines after the run, %d before", n, before)
			}
		})
	}
}

func TestOrderedCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &counter{n: 1 << 30}
	emitted := 0
	err := Ordered(ctx, 2, 4, c.next, func(_ context.Context, i int) (int, error) { return i, nil }, func(int) error {
		if emitted++; emitted == 100 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Ordered = %v; want context.Canceled", err)
	}
}

func TestSavedReaderNamesDocuments(t *testing.T) {
	r := NewSavedReader(nil, strings.NewReader(`{"a":1}`+"\n"+`{"a":2}`+"\n"))
	var names []string
	for {
		d, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, d.Name)
	}
	if fmt.Sprint(names) != "[stdin#1 stdin#2]" {
		t.Errorf("names %v", names)
	}
	one := NewSavedReader(nil, strings.NewReader(`{"a":1}`))
	if d, err := one.Next(); err != nil || d.Name != "stdin" {
		t.Errorf("single document: %q, %v; want stdin", d.Name, err)
	}
}

// TestOrderedDoesNotWaitOnABlockedRead: a reader stuck in a read that only
// more input would end (a quiet stdin) does not keep a cancelled run alive.
func TestOrderedDoesNotWaitOnABlockedRead(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	block := make(chan struct{})
	defer close(block)
	next := func() (int, error) { <-block; return 0, io.EOF }
	done := make(chan error, 1)
	go func() {
		done <- Ordered(ctx, 2, 4, next, func(_ context.Context, i int) (int, error) { return i, nil }, func(int) error { return nil })
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Ordered = %v; want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Ordered still waits on the blocked read after cancellation")
	}
}
