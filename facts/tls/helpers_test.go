package tls

import (
	"context"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// doc is what this package's tests collect into: the keys of the facts
// document the tls collectors read and fill, and what the loop records of
// each, since the tests cannot import the document (it imports this
// package).
type doc struct {
	// kind is the target kind the facts are of: host or rootfs.
	kind      string
	TLS       *facts.TLS
	Network   *facts.Network
	NotJudged []notJudged
	status    map[string][2]string
}

// notJudged is a NotJudged entry of the document.
type notJudged struct{ Collector, What string }

// record keeps a collector's outcome as the loop does.
func (d *doc) record(name, status, reason string) {
	if d.status == nil {
		d.status = map[string][2]string{}
	}
	d.status[name] = [2]string{status, reason}
}

// listening is a host's facts after the network collector found ls.
func listening(ls ...facts.Listener) *doc {
	d := &doc{kind: "host", Network: &facts.Network{Listening: append([]facts.Listener{}, ls...)}}
	d.record("network", collect.StatusOK, "")
	return d
}

// collectOne runs the collect function the loop calls name over env into
// f, reading what f holds as the loop would, and returns its raw error.
func collectOne(t testing.TB, env *collect.Env, f *doc, name string) error {
	t.Helper()
	ctx := context.Background()
	switch name {
	case "tls":
		got, err := Collect(ctx, env, f.TLS, nil)
		if err == nil {
			f.TLS = got
		}
		return err
	case "tls_probe":
		st := f.status["network"]
		got, nj, err := CollectProbes(ctx, env, f.TLS, f.Network, st[0], st[1])
		if err == nil {
			f.TLS = got
			f.NotJudged = nil
			for _, w := range nj {
				f.NotJudged = append(f.NotJudged, notJudged{Collector: "tls_probe", What: w})
			}
		}
		return err
	}
	t.Fatalf("no collector %q", name)
	return nil
}

// validate checks f against the document's schema (ValidateFacts).
func validate(f *doc) error { return ValidateFacts(f) }
