package network

import (
	"context"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// doc is what this package's tests collect into: the network key of the
// facts document, and each collect function's outcome as the loop
// records it.
type doc struct {
	// kind is the target kind the facts are of: host or rootfs.
	kind    string
	Network *facts.Network
	status  map[string]string
}

// validate checks d's facts against the document's schema
// (ValidateFacts).
func validate(d *doc) error { return ValidateFacts(d) }

// collectOne runs the collect function the loop calls name over env into
// f, and returns its raw error.
func collectOne(t testing.TB, env *collect.Env, f *doc, name string) error {
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
func gather(t testing.TB, env *collect.Env, f *doc, names ...string) {
	t.Helper()
	if f.status == nil {
		f.status = map[string]string{}
	}
	for _, n := range names {
		f.status[n], _ = collect.Classify(collectOne(t, env, f, n))
	}
}

// wantStatus fails the test unless gather recorded status for name.
func wantStatus(t *testing.T, f *doc, name, status string) {
	t.Helper()
	if got := f.status[name]; got != status {
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
