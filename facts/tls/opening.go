package tls

import (
	"context"
	"errors"
	"fmt"
	"github.com/gpuhost/gpuhost/facts"
	"net"
	"syscall"
	"time"
)

// opening sends a port's first hello and decides what the rest of its
// probe does. It goes on (ok) when the port answered in TLS or said
// nothing yet, sits on a conventional TLS port, or upgraded in-band:
// then pp.upgrade is the preamble every later connection makes. It stops
// with a probe that says the listener could not be reached, or with
// none when the service speaks something other than TLS, which it notes
// as not judged with what the service said.
//
// A service that greets first (SMTP, IMAP, POP3, FTP, MySQL) is told by
// its greeting, heard while the probe listens before its first hello, or
// on its well-known port by its port where it answered that hello in no
// TLS; one that waits for the client (LDAP, PostgreSQL) by its port
// alone, and asked to upgrade at once.
func (p *prober) opening(ctx context.Context, pp *portProbe, t probeTarget, first *versionRun) (stop *facts.TLSProbe, ok bool) {
	if s := startTLSFor(t.port, nil); s != nil {
		pp.upgrade = s
		pp.startFirst(ctx, t, first, 0)
		var se *startTLSError
		if !errors.As(first.first.err, &se) || !errors.Is(se, errNotProtocol) {
			return p.upgraded(pp, t, first)
		}
		// Something else listens on the port: it is probed as any other.
		pp.upgrade = nil
	}
	pp.startFirst(ctx, t, first, serverFirstWait)
	f := first.first
	if dialFailed(f.err) {
		return p.unreachableProbe(pp, t, f.err), false
	}
	s := startTLSFor(t.port, f.greeting)
	if byPort := startTLSPorts[t.port]; s == nil && !f.greeted && !f.spoke() && byPort != nil && !byPort.clientFirst {
		// A server slow to greet (one that looks its client up first)
		// heard the hello instead: its port says what it speaks.
		s = byPort
	}
	if s != nil {
		pp.upgrade = s
		pp.start(ctx, first, 0)
		return p.upgraded(pp, t, first)
	}
	// PostgreSQL and OpenLDAP hang up on a TLS hello without a word; a
	// service that answers it in its own protocol, or stays silent, is
	// none of them.
	if f.closed && !tlsPorts[t.port] {
		if probe, ok, found := p.clientFirst(ctx, pp, t, first); found {
			return probe, ok
		}
		first.first = f
	}
	switch {
	case f.greeted:
		if tlsPorts[t.port] {
			return nil, true
		}
		p.noteNotTLS(t, "it spoke first, which no TLS server does: "+quote(f.greeting))
		return nil, false
	case f.notTLS && !tlsPorts[t.port]:
		p.noteNotTLS(t, "it answered a TLS hello with something else ("+f.err.Error()+")")
		return nil, false
	}
	return nil, true
}

// clientFirst asks a port that answered the TLS hello in no TLS whether
// it is a client-first protocol that upgrades in-band, whose server waits
// for its client and so has no greeting to tell it by: PostgreSQL's
// SSLRequest, then LDAP's StartTLS (the one its port names was asked
// already). Only an answer in the protocol counts (an upgrade, or its
// refusal of TLS); found is false when neither answered so, and pp is as
// it was.
func (p *prober) clientFirst(ctx context.Context, pp *portProbe, t probeTarget, first *versionRun) (stop *facts.TLSProbe, ok, found bool) {
	for _, s := range []*startTLS{startPostgres, startLDAP} {
		if startTLSPorts[t.port] == s {
			continue
		}
		pp.upgrade = s
		pp.start(ctx, first, 0)
		var se *startTLSError
		err := first.first.err
		if err == nil || errors.As(err, &se) && errors.Is(se, errNoTLS) || first.first.spoke() {
			stop, ok = p.upgraded(pp, t, first)
			return stop, ok, true
		}
		pp.upgrade = nil
	}
	return nil, false, false
}

// startFirst sends the port's first hello, from the wildcard's IPv4
// loopback where the IPv6 loopback cannot be dialed at all: the host has
// none, and the connect failed before a packet left.
func (pp *portProbe) startFirst(ctx context.Context, t probeTarget, first *versionRun, listen time.Duration) {
	pp.start(ctx, first, listen)
	err := first.first.err
	if t.fallback == "" || !dialFailed(err) ||
		!errors.Is(err, syscall.EADDRNOTAVAIL) && !errors.Is(err, syscall.ENETUNREACH) && !errors.Is(err, syscall.EAFNOSUPPORT) {
		return
	}
	pp.conns.Add(-1)
	pp.addr = t.fallback
	pp.start(ctx, first, listen)
}

// upgraded reads the first connection that made the port's preamble: the
// upgrade went through, or the service offers no TLS (not judged), or
// speaks something else than its greeting promised (not judged), or the
// preamble failed, which leaves the listener unjudged and is its error.
func (p *prober) upgraded(pp *portProbe, t probeTarget, first *versionRun) (*facts.TLSProbe, bool) {
	err := first.first.err
	var se *startTLSError
	switch {
	case dialFailed(err):
		return p.unreachableProbe(pp, t, err), false
	case !errors.As(err, &se):
		return nil, true
	case errors.Is(se, errNoTLS):
		p.noteNotTLS(t, fmt.Sprintf("%s that %v", se.proto, se.err))
		return nil, false
	case errors.Is(se, errNotProtocol):
		p.noteNotTLS(t, fmt.Sprintf("%s by its greeting or port, but %v", se.proto, se.err))
		return nil, false
	}
	return &facts.TLSProbe{
		Address: t.listen, Loopback: t.loopback, StartTLS: pp.upgrade.name, WeakSuites: []string{},
		Connections: int(pp.conns.Load()), Error: se.describe(p.timeout),
	}, false
}

// unanswered ends the probe of a port that answered no hello in TLS and
// is no conventional TLS port: unreachable where a connect failed, else
// a silent or hanging-up service noted as not TLS.
func (p *prober) unanswered(pp *portProbe, t probeTarget, runs []*versionRun) *facts.TLSProbe {
	for _, r := range runs {
		if dialFailed(r.first.err) {
			return p.unreachableProbe(pp, t, r.first.err)
		}
	}
	what := "it closed the connection without answering a TLS hello"
	for _, r := range runs {
		if r.first.err != nil && !r.first.closed {
			what = "it accepted the connection but answered no TLS hello: " + unreachable(r.first.err, p.timeout)
			break
		}
	}
	p.noteNotTLS(t, what)
	return nil
}

// unreachableProbe is a listener the probe could not connect to: it is
// in the facts with the connect's failure, so that the checks that would
// judge it report an error, never a pass.
func (p *prober) unreachableProbe(pp *portProbe, t probeTarget, err error) *facts.TLSProbe {
	r := &facts.TLSProbe{
		Address: t.listen, Loopback: t.loopback, Unreachable: true, WeakSuites: []string{},
		Connections: int(pp.conns.Load()), Error: unreachable(err, p.timeout),
	}
	if pp.upgrade != nil {
		r.StartTLS = pp.upgrade.name
	}
	return r
}

// dialFailed tells a connect that failed, refused or unanswered, from a
// connection that failed later.
func dialFailed(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// noteNotTLS notes a TCP listener that is no TLS port, and what it said
// instead.
func (p *prober) noteNotTLS(t probeTarget, what string) {
	p.note(fmt.Sprintf("%s: not TLS: %s", socketLabel(t.listen, "tcp", t.process), what))
}

// socketLabel names a listener in a note: 0.0.0.0:22/tcp (sshd).
func socketLabel(listen, proto, process string) string {
	if process == "" {
		return listen + "/" + proto
	}
	return fmt.Sprintf("%s/%s (%s)", listen, proto, printable([]byte(process)))
}

// note adds one line to what the probe leaves unjudged.
func (p *prober) note(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notJudged = append(p.notJudged, line)
}
