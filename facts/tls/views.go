package tls

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuhost/gpuhost/facts"
)

// A server picks the certificate it sends by the name in the client's
// hello (SNI) and by the local address the client connected to: nginx
// keeps one set of server blocks per address on a wildcard socket, and
// s_server, HAProxy and Envoy choose by name. The probe's own handshakes
// name no server and connect to one address, so they see one certificate;
// the views ask again, once per name the port is known by and once per
// address of the host, and keep each certificate that differs.

// maxViews bounds the views asked of one listener; each is a handshake,
// counted in the port's connection bound.
const maxViews = 16

// maxLocalAddresses bounds the host addresses a wildcard listener is
// asked at.
const maxLocalAddresses = 8

// route is where one handshake goes: an address, and the server name its
// hello sends ("" for none).
type route struct{ addr, name string }

// viewAsk is one view to ask, with where its name came from.
type viewAsk struct {
	route
	source, file string
	line         int
}

// asks lists a target's views: the names the configuration gives its port,
// then the host's addresses for a wildcard listener, then the DNS names of
// the leaf it sends without a name, at most maxViews.
func (p *prober) asks(t probeTarget, leaf *x509.Certificate) []viewAsk {
	var out []viewAsk
	seen := map[route]bool{}
	name := func(n, at, source, file string, line int) {
		n = strings.ToLower(strings.TrimSuffix(n, "."))
		rt := route{addr: t.dial, name: n}
		if at != "" {
			rt.addr = net.JoinHostPort(at, strconv.Itoa(t.port))
		}
		if n == "" || seen[rt] || strings.Contains(n, "*") || net.ParseIP(n) != nil {
			return
		}
		seen[rt] = true
		out = append(out, viewAsk{route: rt, source: source, file: file, line: line})
	}
	for _, n := range p.names[t.port] {
		// A name served at one address is asked there; a listener on
		// another address of the port does not serve it.
		if n.Address != "" && !t.wildcard.IsValid() && !sameHost(n.Address, t.listen) {
			continue
		}
		name(n.Name, n.Address, "nginx", n.File, n.Line)
	}
	if t.wildcard.IsValid() {
		for _, a := range p.local {
			if a.Is4() == t.wildcard.Is4() {
				out = append(out, viewAsk{route: route{addr: net.JoinHostPort(a.String(), strconv.Itoa(t.port))}})
			}
		}
	}
	if leaf != nil {
		for _, d := range leaf.DNSNames {
			name(d, "", "certificate", "", 0)
		}
	}
	return out[:min(len(out), maxViews)]
}

// views asks each of asks for its certificate, at the newest version the
// port accepted, and says how each differs from def, the leaf the probe's
// own handshake got (nil when it got none).
func (pp *portProbe) views(ctx context.Context, asks []viewAsk, runs []*versionRun, def *x509.Certificate) []facts.TLSView {
	if len(asks) == 0 {
		return nil
	}
	out := make([]facts.TLSView, len(asks))
	var wg sync.WaitGroup
	for i, a := range asks {
		wg.Go(func() {
			chain, err := pp.viewChain(ctx, runs, a.route)
			out[i] = pp.view(a, chain, err, def, time.Now())
		})
	}
	wg.Wait()
	return out
}

// viewChain fetches the chain one route gets: at TLS 1.3 as the probe's
// own certificate handshake does, older (or where TLS 1.3's could not be
// keyed) from the clear-text flight of a hello that offers the suites the
// port accepted that need a certificate.
func (pp *portProbe) viewChain(ctx context.Context, runs []*versionRun, rt route) ([]*x509.Certificate, error) {
	var err13 error
	if r := runs[0]; r.accepted() {
		chain, err := pp.certificate13(ctx, rt, r.suites, r.groups, nil)
		if err == nil {
			return chain, nil
		}
		err13 = err
	}
	for _, r := range runs[1:] {
		suites := slices.DeleteFunc(slices.Clone(r.suites), func(id uint16) bool { return !needsCertificate(suiteOf(id)) })
		if len(suites) == 0 {
			continue
		}
		h := r.hello(suites, nil)
		h.serverName = rt.name
		rep := pp.exchangeAt(ctx, rt.addr, h, 0, true)
		switch {
		case rep.cert != nil:
			return parseChain(rep.cert)
		case rep.certErr != nil:
			return nil, rep.certErr
		case rep.alert != nil:
			return nil, rep.alert
		case rep.err != nil:
			return nil, rep.err
		}
		return nil, errors.New("the server sent no certificate")
	}
	if err13 != nil {
		return nil, err13
	}
	return nil, errors.New("the port accepted no suite that sends a certificate")
}

// sameHost says whether addr is the address of listen (address:port).
func sameHost(addr, listen string) bool {
	a, err1 := netip.ParseAddr(addr)
	h, _, err2 := net.SplitHostPort(listen)
	b, err3 := netip.ParseAddr(h)
	return err1 == nil && err2 == nil && err3 == nil && a.Unmap() == b.Unmap()
}

// view is what one ask showed.
func (pp *portProbe) view(a viewAsk, chain []*x509.Certificate, err error, def *x509.Certificate, now time.Time) facts.TLSView {
	v := facts.TLSView{ServerName: a.name, NameSource: a.source, NameFile: a.file, NameLine: a.line, Address: a.addr}
	if err == nil && len(chain) == 0 {
		err = errors.New("the handshake finished without a certificate")
	}
	if err != nil {
		v.Unreachable, v.Error = dialFailed(err), unreachable(err, pp.timeout)
		return v
	}
	leaf := chain[0]
	v.LeafSubject = leaf.Subject.String()
	if a.name != "" {
		ok := leaf.VerifyHostname(a.name) == nil
		v.NameMatches = &ok
	}
	if def != nil && bytes.Equal(leaf.Raw, def.Raw) {
		v.SameAsDefault = true
		return v
	}
	v.Chain, v.Verification = pp.trust.judge(chain, now)
	return v
}

// localAddresses are the host's own unicast addresses, which a wildcard
// listener also answers on: loopback, link-local (which needs a zone to
// dial) and multicast left out, at most maxLocalAddresses. The probe runs
// in the host's network namespace, as the listeners it dials are.
func localAddresses() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	return hostAddresses(addrs)
}

// hostAddresses is localAddresses's choice among an interface's addresses.
func hostAddresses(addrs []net.Addr) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		if !ip.IsGlobalUnicast() || slices.Contains(out, ip) {
			continue
		}
		out = append(out, ip)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return out[:min(len(out), maxLocalAddresses)]
}
