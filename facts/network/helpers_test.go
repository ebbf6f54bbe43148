package network

import (
	"context"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// newDoc is an empty facts document of the given target kind (host or
// rootfs) for the tests to collect into.
func newDoc(kind string) *facts.Facts {
	return facts.New(kind, "test", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
}

// collectOne runs the collect function the loop calls name over env into
// f, and returns its raw error.
func collectOne(t testing.TB, env *collect.Env, f *facts.Facts, name string) error {
	t.Helper()
	ctx := context.Background()
	switch name {
	case "network":
		ls, err := CollectListeners(ctx, env)
		if err == nil {
			if f.Network == nil {
				f.Network = &facts.Network{}
			}
			f.Network.Listening = ls
		}
		return err
	case "firewall":
		net, err := CollectFirewall(ctx, env, f.Network)
		if err == nil {
			f.Network = net
		}
		return err
	}
	t.Fatalf("no collector %q", name)
	return nil
}

// gather runs the named collect functions in order, recording each one's
// outcome and going on, as the loop does.
func gather(t testing.TB, env *collect.Env, f *facts.Facts, names ...string) {
	t.Helper()
	for _, n := range names {
		status, _ := collect.Classify(collectOne(t, env, f, n))
		f.Record(n, status, "")
	}
}

// wantStatus fails the test unless gather recorded status for name.
func wantStatus(t *testing.T, f *facts.Facts, name, status string) {
	t.Helper()
	if got := f.Collectors[name].Status; got != status {
		t.Errorf("collector %s: status %q, want %q", name, got, status)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
