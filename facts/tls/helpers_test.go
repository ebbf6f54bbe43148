package tls

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

// listening is a host's facts after the network collector found ls.
func listening(ls ...facts.Listener) *facts.Facts {
	f := newDoc(facts.KindHost)
	f.Network = &facts.Network{Listening: append([]facts.Listener{}, ls...)}
	f.Record("network", collect.StatusOK, "")
	return f
}

// collectOne runs the collect function the loop calls name over env into
// f, reading what f holds as the loop would, and returns its raw error.
func collectOne(t testing.TB, env *collect.Env, f *facts.Facts, name string) error {
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
		st := f.Collectors["network"]
		got, nj, err := CollectProbes(ctx, env, f.TLS, f.Network, st.Status, st.Reason)
		if err == nil {
			f.TLS = got
			f.NoteNotJudged("tls_probe", nj)
		}
		return err
	}
	t.Fatalf("no collector %q", name)
	return nil
}

// unreachableViews counts the views of p whose connect was refused, which
// the probe counts among its connections and the server never sees.
func unreachableViews(p facts.TLSProbe) int {
	n := 0
	for _, v := range p.Views {
		if v.Unreachable {
			n++
		}
	}
	return n
}

// readCertificate reads a flight for its certificate alone.
func readCertificate(hr *handshakeReader) ([][]byte, error) {
	var rep reply
	rep.readFlight(hr, true, "")
	return rep.cert, rep.certErr
}
