package tls

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpuhost/gpuhost/facts"
)

// listener probes one target: which versions it accepts, every suite and
// TLS 1.3 group it accepts, and its certificate. It returns nil when the
// port shows no sign of speaking TLS and is not a conventional TLS port
// (SSH's banner, an HTTP error page, a silent DNS server, an SMTP server
// without STARTTLS), having noted it as not judged; a listener it cannot
// connect to is a probe with an error.
//
// The TLS 1.3 hello goes first and alone, listening first: a port whose
// server greets first or answers it with something not TLS gets no more
// connections, unless it is a conventional TLS port, which is reported,
// or its greeting names a protocol that upgrades to TLS in-band, whose
// preamble every connection then makes (opening).
func (p *prober) listener(ctx context.Context, t probeTarget) (probe *facts.TLSProbe) {
	pp := newPortProbe(p, t.dial)
	runs := make([]*versionRun, len(probeVersions))
	for i, v := range probeVersions {
		runs[i] = &versionRun{version: v}
	}
	if stop, ok := p.opening(ctx, pp, t, runs[0]); !ok {
		return stop
	}
	defer func() {
		if probe != nil && pp.upgrade != nil {
			probe.StartTLS = pp.upgrade.name
		}
	}()
	each(runs[1:], func(r *versionRun) { pp.start(ctx, r, 0) })
	spoke := slices.ContainsFunc(runs, func(r *versionRun) bool { return r.first.spoke() })
	if !spoke && !tlsPorts[t.port] && pp.upgrade == nil {
		if slow := pp.slow(ctx, t, runs); slow != nil {
			return slow
		}
		return p.unanswered(pp, t, runs)
	}
	each(runs, func(r *versionRun) { pp.enumerate(ctx, r) })
	if i := slices.IndexFunc(runs[1:], func(r *versionRun) bool { return r.accepted() }); i >= 0 {
		pp.enumerateCurves(ctx, runs[1+i])
	}
	chain, staple, certErr := pp.certificate(ctx, runs)

	r := &facts.TLSProbe{Address: t.listen, Loopback: t.loopback, WeakSuites: []string{}}
	var problems, cut []string
	for _, run := range runs {
		if errors.Is(run.err, errBudget) {
			cut = append(cut, strings.TrimSuffix(run.err.Error(), ": "+errBudget.Error()))
			run.err = nil
		}
		problems = append(problems, run.problems(spoke, p.timeout)...)
	}
	if len(cut) > 0 {
		problems = append(problems, errBudget.Error()+", before it finished "+strings.Join(cut, ", "))
	}
	weak := map[string]bool{}
	for _, run := range slices.Backward(runs) {
		if !run.accepted() {
			continue
		}
		r.Protocols = append(r.Protocols, protocolName(run.version))
		for _, id := range run.suites {
			s := suiteOf(id)
			f := s.fact(run.version)
			// The curve an ECDHE suite got is the first of the
			// client's list the server has, so it is not kept.
			if k, ok := run.kex[id]; ok {
				f.DHBits = k.dhBits
			}
			r.Suites = append(r.Suites, f)
			if s.weak() {
				weak[s.name] = true
			}
		}
		for _, g := range run.groups {
			r.Groups = append(r.Groups, groupName(g))
		}
		for _, c := range run.curves {
			name, bits := curveOf(c)
			r.Curves = append(r.Curves, facts.TLSCurve{Name: name, Bits: bits, Protocol: protocolName(run.version)})
		}
	}
	for name := range weak {
		r.WeakSuites = append(r.WeakSuites, name)
	}
	slices.Sort(r.WeakSuites)
	r.TLS10Accepted = slices.Contains(r.Protocols, "TLSv1")
	r.TLS11Accepted = slices.Contains(r.Protocols, "TLSv1.1")
	r.TLS12Accepted = slices.Contains(r.Protocols, "TLSv1.2")
	r.TLS13Accepted = slices.Contains(r.Protocols, "TLSv1.3")
	if len(chain) > 0 {
		now := time.Now()
		r.Certificate = certificateFacts(chain[0], now)
		r.Chain, r.Verification = p.trust.judge(chain, now)
		if staple.known {
			r.OCSPStapled = &staple.stapled
		}
	}
	if certErr != nil {
		problems = append(problems, certErr.Error())
	}
	var leaf *x509.Certificate
	if len(chain) > 0 {
		leaf = chain[0]
	}
	r.Views = pp.views(ctx, p.asks(t, leaf), runs, leaf)
	if len(r.Protocols) == 0 && len(problems) == 0 {
		problems = append(problems, nothingAccepted(runs))
	}
	r.Connections = int(pp.conns.Load())
	r.Error = strings.Join(problems, "; ")
	return r
}

// patience is how many probe timeouts a port that held its hellos open
// without a word gets for one more hello before it is taken for a silent
// service that speaks no TLS.
const patience = 4

// slow asks a port that answered no hello within the probe timeout, and
// held every connection open, once more with patience: a TLS server
// that is slow to answer (a loaded one, one that looks its client up)
// would otherwise be noted as not TLS and judged by no check. One that
// answers in TLS now is reported with an error, which makes the checks
// errors, naming the time it took; nil when it stays silent too.
func (pp *portProbe) slow(ctx context.Context, t probeTarget, runs []*versionRun) *facts.TLSProbe {
	if !slices.ContainsFunc(runs, func(r *versionRun) bool {
		return errors.Is(r.first.err, os.ErrDeadlineExceeded) && !r.first.greeted
	}) {
		return nil
	}
	start := time.Now()
	h := newHello(versionTLS12, offeredSuites(versionTLS12), offeredGroups())
	rep := pp.exchangeWaiting(ctx, pp.addr, h, 0, patience*pp.timeout, false)
	if !rep.spoke() {
		return nil
	}
	took := time.Since(start).Round(100 * time.Millisecond)
	return &facts.TLSProbe{
		Address: t.listen, Loopback: t.loopback, WeakSuites: []string{}, Connections: int(pp.conns.Load()),
		Error: fmt.Sprintf("the server answered a TLS hello only after %s, past the probe timeout of %s, so it was not enumerated: "+
			"scan again with --probe-timeout above %s to judge it", took, pp.timeout, took),
	}
}

// problems says what kept the version from being fully probed. A hello
// the server hung up on is a refusal where the port answered another in
// TLS, as some servers refuse a version they do not speak; where it
// answered none, it is all the probe knows.
func (r *versionRun) problems(portSpoke bool, timeout time.Duration) []string {
	var out []string
	v := versionName(r.version)
	switch f := r.first; {
	case f.greeted:
		out = append(out, v+": the server spoke first, which no TLS server does")
	case f.notTLS:
		out = append(out, v+": the server answered in something other than TLS ("+f.err.Error()+")")
	case f.spoke():
	case f.err != nil && !(f.closed && portSpoke):
		out = append(out, v+": "+unreachable(f.err, timeout))
	}
	if r.err != nil {
		out = append(out, r.err.Error())
	}
	return out
}

// nothingAccepted names what the probe offered a port that answered in
// TLS and accepted none of it, and how it refused.
func nothingAccepted(runs []*versionRun) string {
	var answers []string
	for _, r := range runs {
		a := "no answer"
		switch {
		case r.first.alert != nil:
			a = r.first.alert.Error()
		case r.first.hello != nil:
			a = "a hello at " + protocolName(r.first.hello.version)
		case r.first.closed:
			a = "hung up"
		}
		answers = append(answers, protocolName(r.version)+" "+a)
	}
	return fmt.Sprintf("no protocol version accepted: SSLv3 to TLSv1.2 were each offered all %d registered cipher suites, "+
		"TLSv1.3 its %d suites and %d groups; the server answered %s",
		len(offeredSuites(versionTLS12)), len(offeredSuites(versionTLS13)), len(offeredGroups()), strings.Join(answers, ", "))
}

// certificate is the chain, leaf first as sent, of the newest version that
// shows one: at TLS 1.3 from a handshake that decrypts it, older from the
// flight read in the clear. A port that accepts a version with a
// certificate and shows none is an error; one that accepts only anonymous
// or PSK suites has none. A chain with a certificate that does not parse,
// or over the probe's bound (maxChainCertificates, maxChainBytes), is an
// error too: the listener's, which the checks report by its address.
func (pp *portProbe) certificate(ctx context.Context, runs []*versionRun) ([]*x509.Certificate, stapling, error) {
	var err13 error
	if r := runs[0]; r.accepted() {
		var staple stapling
		c, err := pp.certificate13(ctx, route{addr: pp.addr}, r.suites, r.groups, &staple)
		if c != nil {
			return c, staple, nil
		}
		err13 = fmt.Errorf("tls1.3: the certificate could not be fetched: %w", err)
	}
	var problems []string
	for _, r := range runs[1:] {
		if !r.accepted() {
			continue
		}
		if r.cert != nil {
			c, err := parseChain(r.cert)
			if err == nil {
				return c, stapling{known: true, stapled: r.stapled}, nil
			}
			problems = append(problems, fmt.Sprintf("%s: %v", versionName(r.version), err))
			continue
		}
		if r.certErr != nil {
			problems = append(problems, fmt.Sprintf("%s: the certificate could not be read: %v", versionName(r.version), r.certErr))
		} else if slices.ContainsFunc(r.suites, func(id uint16) bool { return needsCertificate(suiteOf(id)) }) {
			problems = append(problems, versionName(r.version)+": the server sent no certificate for a suite that needs one")
		}
	}
	if err13 != nil {
		problems = append([]string{err13.Error()}, problems...)
	}
	if len(problems) == 0 {
		return nil, stapling{}, nil
	}
	return nil, stapling{}, errors.New(strings.Join(problems, "; "))
}

// needsCertificate: a suite whose server authenticates with a certificate,
// not anonymous, PSK, SRP without RSA or DSS, or Kerberos.
func needsCertificate(s suite) bool {
	if s.tls13 {
		return true
	}
	k := s.kex
	switch {
	case s.anonymous, k == "PSK", k == "DHE_PSK", k == "ECDHE_PSK", k == "PSK_DHE", k == "SRP_SHA", k == "ECCPWD",
		strings.HasPrefix(k, "KRB5"):
		return false
	}
	return true
}
