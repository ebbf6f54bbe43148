package tls

import (
	"context"
	"fmt"
	"net"
	"net/netip"
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

// TestViewBounds: a port is asked at most maxViews times, its configured
// names first, and a wildcard at most maxLocalAddresses of the host's
// addresses, loopback and link-local left out.
func TestViewBounds(t *testing.T) {
	var addrs []net.Addr
	for _, s := range []string{"127.0.0.1/8", "::1/128", "fe80::1/64"} {
		_, n, _ := net.ParseCIDR(s)
		n.IP, _, _ = net.ParseCIDR(s)
		addrs = append(addrs, n)
	}
	for i := range maxLocalAddresses + 2 {
		addrs = append(addrs, &net.IPNet{IP: net.IPv4(10, 0, 0, byte(i+1)), Mask: net.CIDRMask(24, 32)})
	}
	local := hostAddresses(addrs)
	if len(local) != maxLocalAddresses || !local[0].Is4() || local[0].String() != "10.0.0.1" {
		t.Errorf("host addresses %v, want the first %d of 10.0.0.0/24", local, maxLocalAddresses)
	}
	p := &prober{local: local, names: map[int][]facts.TLSServerName{}}
	for i := range maxViews + 4 {
		p.names[443] = append(p.names[443], facts.TLSServerName{Name: fmt.Sprintf("n%d.example", i), Port: 443, File: "/etc/nginx/nginx.conf", Line: i + 1})
	}
	target := probeTarget{listen: "0.0.0.0:443", dial: "127.0.0.1:443", port: 443, wildcard: netip.IPv4Unspecified()}
	asks := p.asks(target, nil)
	if len(asks) != maxViews || asks[0].name != "n0.example" || asks[maxViews-1].name != fmt.Sprintf("n%d.example", maxViews-1) {
		t.Errorf("%d asks, first %+v: want %d, the configured names first", len(asks), asks[0], maxViews)
	}
	p.names[443] = p.names[443][:2]
	asks = p.asks(target, nil)
	if len(asks) != 2+maxLocalAddresses || asks[2].addr != "10.0.0.1:443" || asks[2].name != "" {
		t.Errorf("asks %+v: want 2 names, then each host address without a name", asks)
	}
}
