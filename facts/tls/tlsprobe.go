package tls

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

const (
	defaultProbeTimeout     = 2 * time.Second
	defaultProbeConcurrency = 16
	// perPortHandshakes bounds the probe's connections open at once to one
	// listener, so a small service never sees a burst from the scanner.
	perPortHandshakes = 2
	// serverFirstWait is how long the first connection to a port listens
	// before sending a ClientHello. A TLS server never speaks first; SSH,
	// SMTP, FTP and POP servers greet at once, and such a port is left
	// after that one connection (sshd counts every unauthenticated one
	// against MaxStartups, and starts dropping the scanner's own).
	serverFirstWait = 300 * time.Millisecond
)

// tlsPorts are ports TLS services use by convention. A listener on one of
// them that never answers is reported as an error rather than taken for a
// silent non-TLS service, so a filtered HTTPS port cannot pass unprobed.
var tlsPorts = map[int]bool{
	443: true, 465: true, 636: true, 853: true, 989: true, 990: true, 992: true, 993: true,
	994: true, 995: true, 2376: true, 2379: true, 2380: true, 4443: true, 5061: true,
	5986: true, 6443: true, 8443: true, 9443: true, 10250: true, 10257: true, 10259: true,
}

// errNoListeners says the probe has no listeners to dial.
var errNoListeners = errors.New("no listening sockets known")

// CollectProbes dials each of a live host's listeners and adds what the
// handshakes show to t, the TLS facts from configuration (nil when there
// are none), and returns it with what it found and left unjudged. net is
// the network facts and netStatus, netReason the network collector's
// outcome ("" when it did not run): the firewall collector adds to the
// network facts whether or not the listeners were read, so only that
// outcome says that an empty list means no listeners.
func CollectProbes(ctx context.Context, env *collect.Env, t *facts.TLS, net *facts.Network, netStatus, netReason string) (_ *facts.TLS, notJudged []string, _ error) {
	if !env.Live {
		return nil, nil, collect.NotApplicable("an offline rootfs has no listening ports to probe")
	}
	if netStatus != collect.StatusOK || net == nil || net.Listening == nil {
		if netStatus != "" && netStatus != collect.StatusOK {
			return nil, nil, collect.Unavailable(fmt.Sprintf("%v: the network collector is %s: %s", errNoListeners, netStatus, netReason))
		}
		return nil, nil, collect.Unavailable(errNoListeners.Error())
	}
	listeners := net.Listening
	timeout := env.ProbeTimeout
	if timeout <= 0 {
		timeout = defaultProbeTimeout
	}
	limit := env.ProbeConcurrency
	if limit <= 0 {
		limit = defaultProbeConcurrency
	}
	p := &prober{timeout: timeout, sem: make(chan struct{}, limit), trust: loadTrustStore(env.FS), local: localAddresses()}
	if t != nil {
		p.names = map[int][]facts.TLSServerName{}
		for _, n := range t.ServerNames {
			p.names[n.Port] = append(p.names[n.Port], n)
		}
	}
	probes, err := p.all(ctx, probeTargets(listeners), debugLog(env))
	if err != nil {
		return nil, nil, err
	}
	if t == nil {
		t = &facts.TLS{Nginx: []facts.NginxTLS{}}
	}
	t.Probes = probes
	notJudged = append(p.notJudged, udpNotJudged(listeners)...)
	slices.Sort(notJudged)
	return t, notJudged, nil
}

// debugLog is where the probe says which ports are not TLS; an Env made
// outside the orchestrator may have no logger.
func debugLog(env *collect.Env) func(string, ...any) {
	if env.Log == nil {
		return func(string, ...any) {}
	}
	return env.Log.Debug
}

// prober runs handshakes under one limit shared by every listener.
type prober struct {
	timeout time.Duration
	sem     chan struct{}
	trust   *trustStore // the target's CA bundle, which every chain is verified against
	// names are the server names the configuration gives each port, and
	// local the host's addresses, which the views ask at.
	names map[int][]facts.TLSServerName
	local []netip.Addr

	mu sync.Mutex
	// notJudged are the listeners no check judges, each with why.
	notJudged []string
}

// all probes every target at once (the shared limit does the bounding) and
// returns the TLS listeners sorted by address.
func (p *prober) all(ctx context.Context, targets []probeTarget, debug func(string, ...any)) ([]facts.TLSProbe, error) {
	results := make([]*facts.TLSProbe, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			results[i] = p.listener(ctx, t)
			if results[i] == nil {
				debug("not a TLS port", "address", t.listen)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("probing TLS: %w", err)
	}
	probes := []facts.TLSProbe{}
	for _, r := range results {
		if r != nil {
			probes = append(probes, *r)
		}
	}
	slices.SortFunc(probes, func(a, b facts.TLSProbe) int { return cmp.Compare(a.Address, b.Address) })
	return probes, nil
}

type probeTarget struct {
	listen   string // the listener as reported: address:port
	dial     string // where to connect
	port     int
	loopback bool
	process  string // the program that owns the socket, where known
	// wildcard is the listener's address where it is a wildcard, which
	// answers at every address of the host (invalid otherwise).
	wildcard netip.Addr
	// fallback is where to connect when dial cannot be: the IPv6
	// wildcard's IPv4 loopback, which a dual-stack socket also accepts,
	// for a host whose loopback has no IPv6.
	fallback string
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
		dial, fallback, wildcard := addr, "", netip.Addr{}
		if addr.IsUnspecified() {
			wildcard = addr
		}
		switch {
		case addr == netip.IPv4Unspecified():
			dial = netip.MustParseAddr("127.0.0.1")
		case addr == netip.IPv6Unspecified():
			dial = netip.IPv6Loopback()
			fallback = net.JoinHostPort("127.0.0.1", strconv.Itoa(l.Port))
		}
		listen := net.JoinHostPort(addr.String(), strconv.Itoa(l.Port))
		if seen[listen] {
			continue
		}
		seen[listen] = true
		out = append(out, probeTarget{
			listen:   listen,
			dial:     net.JoinHostPort(dial.String(), strconv.Itoa(l.Port)),
			port:     l.Port,
			loopback: addr.Unmap().IsLoopback(),
			process:  l.Process,
			fallback: fallback,
			wildcard: wildcard,
		})
	}
	return out
}

// unreachable says how a handshake that drew no TLS answer failed, in
// words an operator can act on.
func unreachable(err error, timeout time.Duration) string {
	var oe *net.OpError
	var st *startTLSError
	timedOut := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
	switch {
	case errors.As(err, &st):
		return st.describe(timeout)
	case errors.As(err, &oe) && oe.Op == "dial" && timedOut:
		return fmt.Sprintf("filtered: the TCP connect got no answer within %s", timeout)
	case timedOut:
		return fmt.Sprintf("timed out: connected, but no ServerHello within %s", timeout)
	case errors.Is(err, syscall.ECONNRESET):
		return "reset by the peer during the handshake"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: the listener is gone or refuses this address"
	case errors.Is(err, io.EOF):
		return "the server closed the connection without answering the hello"
	default:
		return err.Error()
	}
}

// speaksFirst reads from a fresh connection for up to wait: any byte means
// the server speaks first, and the first of what it said (one read, at
// most greetingPeek bytes) tells a STARTTLS service from SSH. Silence is
// the TLS answer, and clears the read deadline for the caller to set its
// own; an error (the server closed) is returned.
func speaksFirst(ctx context.Context, conn net.Conn, wait time.Duration) ([]byte, error) {
	deadline := time.Now().Add(wait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetReadDeadline(deadline); err != nil {
		return nil, err
	}
	b := make([]byte, greetingPeek)
	n, err := conn.Read(b)
	if n > 0 {
		return b[:n], nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
		return nil, conn.SetReadDeadline(time.Time{})
	}
	return nil, err
}

func versionName(v uint16) string {
	switch v {
	case versionSSL30:
		return "ssl3"
	case versionTLS10:
		return "tls1.0"
	case versionTLS11:
		return "tls1.1"
	case versionTLS12:
		return "tls1.2"
	case versionTLS13:
		return "tls1.3"
	}
	return fmt.Sprintf("0x%04x", v)
}
