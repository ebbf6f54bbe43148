package tls

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// maxConnectionsPerPort bounds the TCP connections the probe makes to one
// port, every hello and the certificate's handshake together, since a rate
// limit counts each against clients that matter more. It is sized for a
// TLS 1.2 and 1.3 server with nginx's default ciphers, with room for a
// second certificate's suites (TestConnectionsPerPort keeps a typical
// server within three quarters of it); one that accepts every old version
// with every old suite can need more, and its enumeration stops here and
// says so in the probe's error.
const maxConnectionsPerPort = 96

// errBudget: the port's connections are spent.
var errBudget = fmt.Errorf("the enumeration was cut short at the bound of %d connections per port", maxConnectionsPerPort)

// portProbe is the probe of one listener: its connection count and bound,
// and the limit on connections open to it at once.
type portProbe struct {
	*prober
	addr    string
	conns   atomic.Int32
	perPort chan struct{}
	// upgrade is the STARTTLS preamble every connection makes before its
	// hello; nil for a port that speaks TLS from the first byte. It is set
	// before the port's hellos run at once.
	upgrade *startTLS
}

func newPortProbe(p *prober, addr string) *portProbe {
	return &portProbe{prober: p, addr: addr, perPort: make(chan struct{}, perPortHandshakes)}
}

// connect takes one connection from the port's bound and dials addr, within
// the port's and the whole probe's limits on open connections. The
// connection's deadline is the probe timeout, plus listen for a first
// connection that waits for a server that speaks first; a cancelled ctx
// ends it at once. release closes it and hands its places back.
//
// Hellos leave the last connection of the bound to the certificate's
// handshake (spare 1), which comes after them, so that a port cut short
// still shows its certificate.
func (pp *portProbe) connect(ctx context.Context, addr string, listen time.Duration, spare int) (conn net.Conn, release func(), err error) {
	select {
	case pp.perPort <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	select {
	case pp.sem <- struct{}{}:
	case <-ctx.Done():
		<-pp.perPort
		return nil, nil, ctx.Err()
	}
	free := func() { <-pp.sem; <-pp.perPort }
	if pp.conns.Add(1) > int32(maxConnectionsPerPort-spare) {
		pp.conns.Add(-1)
		free()
		return nil, nil, errBudget
	}
	deadline := time.Now().Add(pp.timeout + listen)
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var d net.Dialer
	conn, err = d.DialContext(dctx, "tcp", addr)
	if err != nil {
		free()
		return nil, nil, err
	}
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		free()
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	release = func() { stop(); conn.Close(); free() }
	// A port that upgrades in-band does so on every connection, so each
	// hello is judged on a connection of its own, as TLS.
	if pp.upgrade != nil {
		if err := pp.upgrade.run(ctx, conn, pp.timeout); err != nil {
			release()
			return nil, nil, err
		}
	}
	return conn, release, nil
}

// reply is what one hello drew.
type reply struct {
	hello *serverHello
	alert *alertError
	// cert is the chain a TLS 1.2-or-older server sent after its hello,
	// leaf first, when it was asked for; certErr says why it could not be
	// read.
	cert    [][]byte
	certErr error
	// stapled says, with cert, whether a CertificateStatus followed it.
	stapled bool
	// kex is what the ServerKeyExchange of a TLS 1.2-or-older hello
	// with an ephemeral suite said; kexErr why it could not be read.
	kex     *serverKex
	kexErr  error
	greeted bool // the server spoke before the hello, which no TLS server does
	notTLS  bool // it answered the hello with something that is not TLS
	closed  bool // it closed or reset the connection without a word
	err     error

	// greeting is the first of what a server that greeted said.
	greeting []byte
}

// spoke reports whether the server answered in TLS: a hello or an alert.
func (r reply) spoke() bool { return r.hello != nil || r.alert != nil }

// exchange sends h on a new connection and reads the answer. With listen
// above zero it first waits that long for the server to speak, and stops
// there if it does. With wantCert, the flight after a TLS 1.2-or-older
// ServerHello is read on to its Certificate, which travels in the clear.
func (pp *portProbe) exchange(ctx context.Context, h *clientHello, listen time.Duration, wantCert bool) reply {
	return pp.exchangeAt(ctx, pp.addr, h, listen, wantCert)
}

// exchangeAt is exchange on a connection to addr, one of the listener's
// other addresses.
func (pp *portProbe) exchangeAt(ctx context.Context, addr string, h *clientHello, listen time.Duration, wantCert bool) reply {
	return pp.exchangeWaiting(ctx, addr, h, listen, 0, wantCert)
}

// exchangeWaiting is exchangeAt that waits patience beyond the probe
// timeout for the answer.
func (pp *portProbe) exchangeWaiting(ctx context.Context, addr string, h *clientHello, listen, patience time.Duration, wantCert bool) reply {
	var rep reply
	conn, release, err := pp.connect(ctx, addr, listen+patience, 1)
	if err != nil {
		rep.err = err
		return rep
	}
	defer release()
	if listen > 0 {
		if greeting, err := speaksFirst(ctx, conn, listen); len(greeting) > 0 || err != nil {
			// A TLS server that can serve no one (no suite its own
			// versions allow) sends its fatal alert on accept, before
			// any hello: a TLS refusal, not a greeting.
			if a := greetingAlert(greeting); a != nil {
				rep.alert = a
				return rep
			}
			rep.greeted, rep.greeting, rep.err = len(greeting) > 0, greeting, err
			return rep
		}
		// Listening cleared the deadline; the hello gets the time
		// every hello gets.
		if err := conn.SetDeadline(time.Now().Add(pp.timeout + patience)); err != nil {
			rep.err = err
			return rep
		}
	}
	if _, err := conn.Write(h.record(h.message())); err != nil {
		rep.err, rep.closed = err, closedQuietly(err)
		return rep
	}
	hr := &handshakeReader{rr: newRecordReader(conn)}
	msg, err := hr.next()
	var alert *alertError
	switch {
	case errors.As(err, &alert):
		rep.alert = alert
		return rep
	case errors.Is(err, errNotTLS):
		rep.notTLS, rep.err = true, err
		return rep
	case err != nil:
		rep.err, rep.closed = err, closedQuietly(err)
		return rep
	}
	if rep.hello, err = parseServerHello(msg); err != nil {
		rep.err = err
		return rep
	}
	if rep.hello.version < versionTLS13 {
		kind := ephemeral(suiteOf(rep.hello.suite).kex)
		if wantCert || kind != "" {
			rep.readFlight(hr, wantCert, kind)
		}
	}
	return rep
}

// greetingAlert reads a greeting that is one whole TLS alert record
// (content type 21, a 3.x record version, two bytes), or nil.
func greetingAlert(g []byte) *alertError {
	if len(g) != 7 || g[0] != recordAlert || g[1] != 3 || g[2] > 4 || g[3] != 0 || g[4] != 2 {
		return nil
	}
	return &alertError{level: g[5], desc: g[6]}
}

// closedQuietly tells a server that hung up on the hello, which some do
// instead of sending an alert, from one that failed.
func closedQuietly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// readFlight reads a TLS 1.2-or-older server's messages after its
// ServerHello, as far as what is wanted: its Certificate, every
// certificate in it leaf first (none, and no error, when the flight ends
// without one, as an anonymous or PSK suite's does), and the
// ServerKeyExchange of an ephemeral key exchange of kind ("ec", "dh").
func (rep *reply) readFlight(hr *handshakeReader, wantCert bool, kind string) {
	fail := func(err error) {
		if wantCert {
			rep.certErr = err
		}
		if kind != "" {
			rep.kexErr = err
		}
	}
	// A stapled OCSP response comes right after the Certificate, so the
	// flight is read on to the message after it.
	status := false
	for range 8 {
		if !wantCert && kind == "" && !status {
			return
		}
		msg, err := hr.next()
		if err != nil {
			fail(err)
			return
		}
		switch msg[0] {
		case typeCertificate:
			if wantCert {
				rep.cert, rep.certErr = parseCertificates(msg, false)
				wantCert, status = false, rep.certErr == nil
				continue
			}
		case typeCertificateStatus:
			rep.stapled = status
			status = false
			continue
		case typeServerKeyExchange:
			status = false
			if kind != "" {
				k, err := parseServerKeyExchange(msg, kind)
				if err != nil {
					rep.kexErr = err
				} else {
					rep.kex = &k
				}
				kind = ""
			}
		case typeServerHelloDone:
			if kind != "" {
				rep.kexErr = errors.New("the flight ended without the ServerKeyExchange its suite needs")
			}
			return
		case typeCertificateRequest:
			status = false
		default:
			fail(fmt.Errorf("handshake message type %d in the server's first flight", msg[0]))
			return
		}
	}
	fail(errors.New("the server's first flight ran past 8 messages"))
}

// versionRun is what one version's hellos found.
type versionRun struct {
	version uint16
	first   reply
	suites  []uint16 // accepted, in the order the server chose them
	groups  []uint16 // TLS 1.3: accepted, in the order chosen
	cert    [][]byte // the chain a TLS 1.2-or-older flight carried
	certErr error
	stapled bool // an OCSP response followed cert
	// kex is, per ephemeral suite accepted before TLS 1.3, what its
	// ServerKeyExchange said; curves the ECDHE curves accepted, in the
	// order chosen (enumerateCurves).
	kex    map[uint16]serverKex
	curves []uint16
	err    error // why the enumeration stopped short
}

func (r *versionRun) accepted() bool { return len(r.suites) > 0 }

// hello is the version's hello offering suites and, at TLS 1.3, groups.
func (r *versionRun) hello(suites, groups []uint16) *clientHello {
	return newHello(r.version, suites, groups)
}

// take records what the server chose from the offer, or why it is no
// choice: a hello at another version (older: the offer was refused at
// this one), a suite or group that was never offered.
func (r *versionRun) take(rep reply, suites, groups []uint16) (bool, error) {
	sh := rep.hello
	if sh == nil {
		return false, nil
	}
	if sh.version != r.version {
		if sh.version > r.version {
			return false, fmt.Errorf("the server chose %s, which was not offered", versionName(sh.version))
		}
		return false, nil
	}
	if !slices.Contains(suites, sh.suite) {
		return false, fmt.Errorf("the server chose cipher suite 0x%04x, which was not offered", sh.suite)
	}
	if r.version == versionTLS13 && !slices.Contains(groups, sh.group) {
		return false, fmt.Errorf("the server chose group 0x%04x, which was not offered", sh.group)
	}
	if !slices.Contains(r.suites, sh.suite) {
		r.suites = append(r.suites, sh.suite)
	}
	if r.version == versionTLS13 && !slices.Contains(r.groups, sh.group) {
		r.groups = append(r.groups, sh.group)
	}
	if r.cert == nil && rep.cert != nil {
		r.cert, r.stapled = rep.cert, rep.stapled
	}
	if _, seen := r.kex[sh.suite]; rep.kex != nil && !seen {
		if r.kex == nil {
			r.kex = map[uint16]serverKex{}
		}
		r.kex[sh.suite] = *rep.kex
	}
	if rep.certErr != nil && r.certErr == nil {
		r.certErr = rep.certErr
	}
	return true, nil
}

// start sends the version's first hello, offering everything.
func (pp *portProbe) start(ctx context.Context, r *versionRun, listen time.Duration) {
	suites, groups := offeredSuites(r.version), offeredGroups()
	r.first = pp.exchange(ctx, r.hello(suites, groups), listen, r.version < versionTLS13)
	if _, err := r.take(r.first, suites, groups); err != nil {
		r.err = fmt.Errorf("%s: %w", versionName(r.version), err)
	}
}

// enumerate lists what an accepted version accepts: offer everything,
// note the server's choice, take it away and ask again until the server
// refuses. At TLS 1.3 the suites are listed with every group offered and
// the groups with every suite offered.
func (pp *portProbe) enumerate(ctx context.Context, r *versionRun) {
	if !r.accepted() || r.err != nil {
		return
	}
	suites := offeredSuites(r.version)
	groups := offeredGroups()
	r.err = pp.drain(ctx, r, "cipher suites", func() (bool, error) {
		offer := without(suites, r.suites)
		if len(offer) == 0 {
			return false, nil
		}
		rep := pp.exchange(ctx, r.hello(offer, groups), 0, r.cert == nil)
		return pp.judge(r, rep, offer, groups)
	})
	if r.err != nil || r.version != versionTLS13 {
		return
	}
	r.err = pp.drain(ctx, r, "groups", func() (bool, error) {
		offer := without(groups, r.groups)
		if len(offer) == 0 {
			return false, nil
		}
		rep := pp.exchange(ctx, r.hello(suites, offer), 0, false)
		return pp.judge(r, rep, suites, offer)
	})
}

// enumerateCurves lists the elliptic curves a version before TLS 1.3
// accepts for ECDHE, as the TLS 1.3 groups are: offer the ECDHE suites it
// accepted with every curve, note the one its ServerKeyExchange names,
// take it away and ask again until the server refuses.
func (pp *portProbe) enumerateCurves(ctx context.Context, r *versionRun) {
	ec := slices.DeleteFunc(slices.Clone(r.suites), func(id uint16) bool { return ephemeral(suiteOf(id).kex) != "ec" })
	if len(ec) == 0 || r.err != nil {
		return
	}
	for _, id := range ec {
		if k, ok := r.kex[id]; ok && !slices.Contains(r.curves, k.curve) {
			r.curves = append(r.curves, k.curve)
		}
	}
	r.err = pp.drain(ctx, r, "curves", func() (bool, error) {
		offer := without(legacyCurves, r.curves)
		if len(offer) == 0 {
			return false, nil
		}
		h := r.hello(ec, nil)
		h.curves = offer
		rep := pp.exchange(ctx, h, 0, false)
		switch {
		case errors.Is(rep.err, errBudget):
			return false, errBudget
		case rep.err != nil && !rep.closed:
			return false, errors.New(unreachable(rep.err, pp.timeout))
		case rep.hello == nil || rep.hello.version != r.version:
			return false, nil
		case rep.kexErr != nil:
			return false, fmt.Errorf("the curve could not be read: %w", rep.kexErr)
		case rep.kex == nil:
			return false, nil
		case !slices.Contains(offer, rep.kex.curve):
			return false, fmt.Errorf("the server chose curve 0x%04x, which was not offered", rep.kex.curve)
		}
		r.curves = append(r.curves, rep.kex.curve)
		return true, nil
	})
}

// drain runs step until it finds nothing more, naming what was being
// listed when a connection fails.
func (pp *portProbe) drain(ctx context.Context, r *versionRun, what string, step func() (bool, error)) error {
	for ctx.Err() == nil {
		more, err := step()
		if err != nil {
			return fmt.Errorf("%s %s: %w", versionName(r.version), what, err)
		}
		if !more {
			return nil
		}
	}
	return ctx.Err()
}

// judge reads one enumeration reply: a choice from the offer, a refusal
// (an alert, a hang-up or an older version), or a failure.
func (pp *portProbe) judge(r *versionRun, rep reply, suites, groups []uint16) (bool, error) {
	switch {
	case errors.Is(rep.err, errBudget):
		return false, errBudget
	case rep.err != nil && !rep.closed:
		return false, errors.New(unreachable(rep.err, pp.timeout))
	}
	return r.take(rep, suites, groups)
}

func without(all, taken []uint16) []uint16 {
	return slices.DeleteFunc(slices.Clone(all), func(id uint16) bool { return slices.Contains(taken, id) })
}

// each runs f for every version at once; the port's limit on open
// connections paces them.
func each(runs []*versionRun, f func(*versionRun)) {
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() { f(r) })
	}
	wg.Wait()
}
