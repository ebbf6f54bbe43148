package system

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/facts"
)

const (
	defaultProbeTimeout     = 2 * time.Second
	defaultProbeConcurrency = 16
)

type tlsProbeCollector struct{}

var _ collector.Collector = tlsProbeCollector{}

func (tlsProbeCollector) Name() string { return "tls_probe" }

func (tlsProbeCollector) Collect(ctx context.Context, env *collector.Env, f *facts.Facts) error {
	if !env.Live {
		return collector.NotApplicable("an offline rootfs has no listening ports to probe")
	}
	if f.Network == nil || f.Network.Listening == nil {
		return collector.Unavailable(errNoListeners.Error())
	}
	timeout := env.ProbeTimeout
	if timeout <= 0 {
		timeout = defaultProbeTimeout
	}
	limit := env.ProbeConcurrency
	if limit <= 0 {
		limit = defaultProbeConcurrency
	}
	targets := probeTargets(f.Network.Listening)
	results := make([]*facts.TLSProbe, len(targets))
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	log := logger(env)
	for i, t := range targets {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return fmt.Errorf("probing TLS: %w", ctx.Err())
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = probe(ctx, t, timeout)
			if results[i] == nil {
				log.Debug("not a TLS port", "address", t.listen)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("probing TLS: %w", err)
	}
	probes := []facts.TLSProbe{}
	for _, r := range results {
		if r != nil {
			probes = append(probes, *r)
		}
	}
	slices.SortFunc(probes, func(a, b facts.TLSProbe) int { return cmp.Compare(a.Address, b.Address) })
	if f.TLS == nil {
		f.TLS = &facts.TLS{Nginx: []facts.NginxTLS{}}
	}
	f.TLS.Probes = probes
	return nil
}

type probeTarget struct {
	listen string // the listener as reported: address:port
	dial   string // where to connect
}

// probeTargets turns TCP listeners into dial addresses, mapping the
// wildcard addresses onto loopback, which a wildcard socket also accepts.
func probeTargets(ls []facts.Listener) []probeTarget {
	seen := map[string]bool{}
	var out []probeTarget
	for _, l := range ls {
		if l.Proto != "tcp" && l.Proto != "tcp6" {
			continue
		}
		addr, err := netip.ParseAddr(l.Address)
		if err != nil || l.Port <= 0 || l.Port > 65535 {
			continue
		}
		dial := addr
		switch {
		case addr == netip.IPv4Unspecified():
			dial = netip.MustParseAddr("127.0.0.1")
		case addr == netip.IPv6Unspecified():
			dial = netip.IPv6Loopback()
		}
		listen := net.JoinHostPort(addr.String(), strconv.Itoa(l.Port))
		if seen[listen] {
			continue
		}
		seen[listen] = true
		out = append(out, probeTarget{listen: listen, dial: net.JoinHostPort(dial.String(), strconv.Itoa(l.Port))})
	}
	return out
}

// probe handshakes once pinned to TLS 1.2 and once pinned to TLS 1.3. It
// returns nil when the port shows no sign of speaking TLS: neither
// handshake succeeded and neither drew a TLS alert (SSH's banner, an HTTP
// error page, a silent DNS server and a closed port all land here).
func probe(ctx context.Context, t probeTarget, timeout time.Duration) *facts.TLSProbe {
	ok12, tls12, err12 := handshake(ctx, t.dial, tls.VersionTLS12, timeout)
	ok13, tls13, err13 := handshake(ctx, t.dial, tls.VersionTLS13, timeout)
	if !ok12 && !ok13 && !tls12 && !tls13 {
		return nil
	}
	p := &facts.TLSProbe{Address: t.listen, TLS12Accepted: ok12, TLS13Accepted: ok13}
	// A refusal by alert is the expected answer to a disallowed version;
	// anything else (a reset, a timeout) is worth showing.
	var msgs []string
	if !ok12 && !tls12 && err12 != nil {
		msgs = append(msgs, "tls1.2: "+err12.Error())
	}
	if !ok13 && !tls13 && err13 != nil {
		msgs = append(msgs, "tls1.3: "+err13.Error())
	}
	p.Error = strings.Join(msgs, "; ")
	return p
}

// handshake reports whether a client pinned to version completed a
// handshake at exactly that version, and whether the peer answered in TLS
// at all (success or an alert).
func handshake(ctx context.Context, addr string, version uint16, timeout time.Duration) (ok, spokeTLS bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, false, err
	}
	defer conn.Close()
	c := tls.Client(conn, &tls.Config{
		MinVersion: version,
		MaxVersion: version,
		// The probe asks which protocol versions the port accepts, not
		// whom it belongs to: the certificate is often self-signed or
		// issued for a name we cannot know from a socket, and no data is
		// sent after the handshake.
		InsecureSkipVerify: true, //nolint:gosec // protocol probe, see above
	})
	if err := c.HandshakeContext(ctx); err != nil {
		return false, tlsAnswer(err), err
	}
	return c.ConnectionState().Version == version, true, nil
}

// tlsAnswer tells whether a failed handshake still heard TLS from the peer:
// a TLS alert from the server, or a server hello the client then refused.
// A record that is not TLS at all (RecordHeaderError), a closed connection
// or a timeout is not.
func tlsAnswer(err error) bool {
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) {
		return false
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "remote error" {
		return true
	}
	var ae tls.AlertError
	if errors.As(err, &ae) {
		return true
	}
	return strings.HasPrefix(err.Error(), "tls: ")
}
