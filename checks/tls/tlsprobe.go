package tls

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/facts"
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

// probeVersions are the protocol versions each listener is asked for, newest
// first: the certificate is taken from the newest version that shows one.
var probeVersions = []uint16{tls.VersionTLS13, tls.VersionTLS12, tls.VersionTLS11, tls.VersionTLS10}

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

type tlsProbeCollector struct{}

var _ collector.Collector = tlsProbeCollector{}

func (tlsProbeCollector) Name() string { return "tls_probe" }

// Needs network and tls: the probe dials the listeners the network collector
// found, and adds its probes to the TLS facts the tls collector fills from
// configuration.
func (tlsProbeCollector) Needs() []string { return []string{"network", "tls"} }

func (tlsProbeCollector) Collect(ctx context.Context, env *collector.Env, f *facts.Facts) error {
	if !env.Live {
		return collector.NotApplicable("an offline rootfs has no listening ports to probe")
	}
	// The firewall collector adds to the network facts whether or not the
	// listeners were read, so only the network collector's status says
	// that an empty list means no listeners.
	if st, ran := f.Collectors["network"]; !ran || st.Status != facts.StatusOK || f.Network == nil || f.Network.Listening == nil {
		if ran && st.Status != facts.StatusOK {
			return collector.Unavailable(fmt.Sprintf("%v: the network collector is %s: %s", errNoListeners, st.Status, st.Reason))
		}
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
	p := &prober{timeout: timeout, sem: make(chan struct{}, limit)}
	probes, err := p.all(ctx, probeTargets(f.Network.Listening), debugLog(env))
	if err != nil {
		return err
	}
	if f.TLS == nil {
		f.TLS = &facts.TLS{Nginx: []facts.NginxTLS{}}
	}
	f.TLS.Probes = probes
	return nil
}

// debugLog is where the probe says which ports are not TLS; an Env made
// outside the orchestrator may have no logger.
func debugLog(env *collector.Env) func(string, ...any) {
	if env.Log == nil {
		return func(string, ...any) {}
	}
	return env.Log.Debug
}

// prober runs handshakes under one limit shared by every listener.
type prober struct {
	timeout time.Duration
	sem     chan struct{}
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
		out = append(out, probeTarget{
			listen:   listen,
			dial:     net.JoinHostPort(dial.String(), strconv.Itoa(l.Port)),
			port:     l.Port,
			loopback: addr.Unmap().IsLoopback(),
		})
	}
	return out
}

// attempt is what one handshake pinned to one version learned.
type attempt struct {
	version  uint16
	accepted bool // the ServerHello chose the pinned version
	spoke    bool // the peer answered in TLS at all (a hello or an alert)
	// greeted: the peer sent before the ClientHello, which no TLS server
	// does; notTLS: it answered the ClientHello with something else.
	greeted, notTLS bool
	cert            *x509.Certificate
	suite           uint16 // the suite of a completed handshake
	err             error
}

// listener probes one target at every version, and for its weak cipher
// suites where it accepts TLS 1.2 or older. It returns nil when the port
// shows no sign of speaking TLS and is not a conventional TLS port: SSH's
// banner, an HTTP error page, a silent DNS server and a closed port all
// land there.
//
// The first version is asked alone, listening first: a port whose server
// greets first or answers the hello with something not TLS gets no more
// connections, unless it is a conventional TLS port, which is reported.
func (p *prober) listener(ctx context.Context, t probeTarget) *facts.TLSProbe {
	attempts := make([]attempt, len(probeVersions))
	attempts[0] = p.handshake(ctx, t.dial, probeVersions[0], everySuite, serverFirstWait)
	if (attempts[0].greeted || attempts[0].notTLS) && !tlsPorts[t.port] {
		return nil
	}
	perPort := make(chan struct{}, perPortHandshakes)
	var wg sync.WaitGroup
	for i, v := range probeVersions {
		if i == 0 {
			continue
		}
		wg.Go(func() {
			perPort <- struct{}{}
			defer func() { <-perPort }()
			attempts[i] = p.handshake(ctx, t.dial, v, everySuite, 0)
		})
	}
	wg.Wait()
	spoke := slices.ContainsFunc(attempts, func(a attempt) bool { return a.spoke })
	if !spoke && !tlsPorts[t.port] {
		return nil
	}
	r := &facts.TLSProbe{Address: t.listen, Loopback: t.loopback, WeakSuites: []string{}}
	var problems []string
	for _, a := range attempts {
		switch a.version {
		case tls.VersionTLS10:
			r.TLS10Accepted = a.accepted
		case tls.VersionTLS11:
			r.TLS11Accepted = a.accepted
		case tls.VersionTLS12:
			r.TLS12Accepted = a.accepted
		case tls.VersionTLS13:
			r.TLS13Accepted = a.accepted
		}
		if r.Certificate == nil && a.cert != nil {
			r.Certificate = certificateFacts(a.cert, time.Now())
		}
		switch {
		case a.greeted:
			problems = append(problems, versionName(a.version)+": the server spoke first, which no TLS server does")
		case !a.spoke && a.err != nil:
			problems = append(problems, versionName(a.version)+": "+unreachable(a.err, p.timeout))
		}
	}
	if legacy := newestLegacy(attempts); legacy != 0 {
		suites, err := p.weakSuites(ctx, t.dial, legacy)
		r.WeakSuites = suites
		if err != nil {
			problems = append(problems, err.Error())
		}
	}
	r.Error = strings.Join(problems, "; ")
	return r
}

// newestLegacy is the newest accepted version below TLS 1.3, where cipher
// suites are still the server's choice from the client's list; 0 if none.
func newestLegacy(attempts []attempt) uint16 {
	for _, a := range attempts {
		if a.accepted && a.version < tls.VersionTLS13 {
			return a.version
		}
	}
	return 0
}

// unreachable says how a handshake that drew no TLS answer failed, in
// words an operator can act on.
func unreachable(err error, timeout time.Duration) string {
	var oe *net.OpError
	timedOut := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
	switch {
	case errors.As(err, &oe) && oe.Op == "dial" && timedOut:
		return fmt.Sprintf("filtered: the TCP connect got no answer within %s", timeout)
	case timedOut:
		return fmt.Sprintf("timed out: connected, but no ServerHello within %s", timeout)
	case errors.Is(err, syscall.ECONNRESET):
		return "reset by the peer during the handshake"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: the listener is gone or refuses this address"
	default:
		return err.Error()
	}
}

// handshake connects to addr pinned to version, offering suites (they only
// matter below TLS 1.3), and reports what the server chose. With listen
// above zero it first waits that long for the server to speak, and stops
// there if it does.
func (p *prober) handshake(ctx context.Context, addr string, version uint16, suites []uint16, listen time.Duration) attempt {
	a := attempt{version: version}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		a.err = ctx.Err()
		return a
	}
	defer func() { <-p.sem }()
	// Listening comes on top of the time a handshake is given.
	ctx, cancel := context.WithTimeout(ctx, p.timeout+listen)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		a.err = err
		return a
	}
	defer conn.Close()
	if listen > 0 {
		if greeted, err := speaksFirst(ctx, conn, listen); greeted || err != nil {
			a.greeted, a.err = greeted, err
			return a
		}
	}
	c := tls.Client(conn, &tls.Config{
		MinVersion:   version,
		MaxVersion:   version,
		CipherSuites: suites,
		// The probe asks which versions and suites the port accepts and
		// what certificate it shows, not whom it belongs to: the
		// certificate is judged by policy, and no data is sent.
		InsecureSkipVerify: true, //nolint:gosec // protocol probe, see above
		// The server's certificate arrives before it asks for ours, so
		// it is kept even when the handshake then fails for want of a
		// client certificate.
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) > 0 {
				a.cert, _ = x509.ParseCertificate(raw[0])
			}
			return nil
		},
	})
	err = c.HandshakeContext(ctx)
	// Version is set from the ServerHello, before anything that can fail
	// later (a demanded client certificate); the client refuses a hello at
	// any other version, so equality means the server chose it.
	a.accepted = c.ConnectionState().Version == version
	a.spoke = err == nil || a.accepted || tlsAnswer(err)
	var rh tls.RecordHeaderError
	a.notTLS = !a.spoke && errors.As(err, &rh)
	a.err = err
	if err == nil {
		a.suite = c.ConnectionState().CipherSuite
	}
	return a
}

// speaksFirst reads from a fresh connection for up to wait: any byte means
// the server speaks first. Silence is the TLS answer and leaves the
// connection as it was; an error (the server closed) is returned.
func speaksFirst(ctx context.Context, conn net.Conn, wait time.Duration) (bool, error) {
	deadline := time.Now().Add(wait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetReadDeadline(deadline); err != nil {
		return false, err
	}
	var b [1]byte
	n, err := conn.Read(b[:])
	if n > 0 {
		return true, nil
	}
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
		return false, conn.SetReadDeadline(time.Time{})
	}
	return false, err
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

func versionName(v uint16) string {
	switch v {
	case tls.VersionTLS10:
		return "tls1.0"
	case tls.VersionTLS11:
		return "tls1.1"
	case tls.VersionTLS12:
		return "tls1.2"
	case tls.VersionTLS13:
		return "tls1.3"
	}
	return fmt.Sprintf("0x%04x", v)
}
