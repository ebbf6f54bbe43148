package tls

import (
	"context"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// probePort runs the prober against one loopback port as a conventional
// TLS port, so that a refusal of everything is still reported.
func probePort(t *testing.T, port int) *facts.TLSProbe {
	t.Helper()
	p := &prober{timeout: 2 * time.Second, sem: make(chan struct{}, 4)}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	r := p.listener(context.Background(), probeTarget{listen: addr, dial: addr, port: 443})
	if r == nil {
		t.Fatal("the port was not taken for a TLS listener")
	}
	f := newDoc(facts.KindHost)
	f.TLS = &facts.TLS{Nginx: []facts.NginxTLS{}, Probes: []facts.TLSProbe{*r}}
	if err := facts.Validate(*f); err != nil {
		t.Errorf("probe facts do not validate: %v", err)
	}
	return r
}

// suiteNames lists a probe's suites as "protocol name".
func suiteNames(p *facts.TLSProbe) []string {
	var out []string
	for _, s := range p.Suites {
		out = append(out, s.Protocol+" "+s.Name)
	}
	return out
}

func testLeaf(t *testing.T) []byte {
	_, _, pair := testutil.WriteCert(t, t.TempDir(), loopbackCert)
	return pair.Certificate[0]
}

// TestEnumeratesWhatGoLacks: SSLv3, export, NULL and anonymous suites,
// which no Go client offers, are found at each version in the server's
// order, with their classes, and the certificate comes from the clear
// flight.
func TestEnumeratesWhatGoLacks(t *testing.T) {
	const (
		rsaExportRC4 = 0x0003
		rsaNullSHA   = 0x0002
		adhAES128    = 0x0034
		ecdheRC4     = 0xc011
	)
	f := &fakeServer{t: t, cert: testLeaf(t), suites: map[uint16][]uint16{
		versionSSL30: {rsaExportRC4, rsaNullSHA},
		versionTLS10: {adhAES128, ecdheRC4, rsaNullSHA},
	}}
	p := probePort(t, f.start())
	if p.Error != "" {
		t.Errorf("error %q", p.Error)
	}
	if !slices.Equal(p.Protocols, []string{"SSLv3", "TLSv1"}) || !p.TLS10Accepted || p.TLS12Accepted {
		t.Errorf("protocols %v (1.0 %v, 1.2 %v), want SSLv3 and TLSv1", p.Protocols, p.TLS10Accepted, p.TLS12Accepted)
	}
	want := []string{
		"SSLv3 TLS_RSA_EXPORT_WITH_RC4_40_MD5", "SSLv3 TLS_RSA_WITH_NULL_SHA",
		"TLSv1 TLS_DH_anon_WITH_AES_128_CBC_SHA", "TLSv1 TLS_ECDHE_RSA_WITH_RC4_128_SHA", "TLSv1 TLS_RSA_WITH_NULL_SHA",
	}
	if got := suiteNames(p); !slices.Equal(got, want) {
		t.Errorf("suites %v, want %v", got, want)
	}
	classes := map[string]func(facts.TLSSuite) bool{
		"TLS_RSA_EXPORT_WITH_RC4_40_MD5":   func(s facts.TLSSuite) bool { return s.Export && s.RC4 && !s.ForwardSecrecy && s.MAC == "MD5" },
		"TLS_RSA_WITH_NULL_SHA":            func(s facts.TLSSuite) bool { return s.Null && !s.AEAD && s.MAC == "SHA1" && s.KeyExchange == "RSA" },
		"TLS_DH_anon_WITH_AES_128_CBC_SHA": func(s facts.TLSSuite) bool { return s.Anonymous && s.CBC && s.ForwardSecrecy },
		"TLS_ECDHE_RSA_WITH_RC4_128_SHA":   func(s facts.TLSSuite) bool { return s.RC4 && s.ForwardSecrecy && !s.CBC && s.Cipher == "RC4_128" },
	}
	for _, s := range p.Suites {
		if ok := classes[s.Name]; ok == nil || !ok(s) {
			t.Errorf("suite %+v: wrong classes", s)
		}
	}
	if len(p.WeakSuites) != 4 {
		t.Errorf("weak suites %v, want all four", p.WeakSuites)
	}
	if p.Certificate == nil || p.Certificate.Subject != "CN=gpuhost test peer" {
		t.Errorf("certificate %+v, want the leaf of the clear flight", p.Certificate)
	}
	// One hello per version, then per version one per suite and one the
	// server refused, then one offering the curves beyond the one its
	// ECDHE suite named, which it refused, then one per view, of which
	// those the server never saw were refused at another address.
	if len(p.Curves) != 1 || p.Curves[0] != (facts.TLSCurve{Name: "secp256r1", Bits: 256, Protocol: "TLSv1"}) {
		t.Errorf("curves %+v, want secp256r1 alone", p.Curves)
	}
	if want := 5 + 2 + 3 + 1 + len(p.Views); p.Connections != want || int(f.conns.Load()) != want-unreachableViews(*p) {
		t.Errorf("%d connections recorded, %d made, want %d (views %+v)", p.Connections, f.conns.Load(), want, p.Views)
	}
}

// TestEnumeratesTLS13ByRetry: the groups come from HelloRetryRequests
// alone, the suites from the same hellos; no key share is ever sent.
func TestEnumeratesTLS13ByRetry(t *testing.T) {
	f := &fakeServer{t: t, suites: map[uint16][]uint16{versionTLS13: {0x1302, 0x1301}},
		groups: []uint16{groupFFDHE3072, groupX448, groupX25519ML}}
	p := probePort(t, f.start())
	if !slices.Equal(p.Protocols, []string{"TLSv1.3"}) {
		t.Errorf("protocols %v", p.Protocols)
	}
	if got, want := suiteNames(p), []string{"TLSv1.3 TLS_AES_256_GCM_SHA384", "TLSv1.3 TLS_AES_128_GCM_SHA256"}; !slices.Equal(got, want) {
		t.Errorf("suites %v, want %v", got, want)
	}
	if want := []string{"ffdhe3072", "x448", "X25519MLKEM768"}; !slices.Equal(p.Groups, want) {
		t.Errorf("groups %v, want %v", p.Groups, want)
	}
	// The fake server never finishes a handshake, so its certificate is a
	// named error, not a silence.
	if !strings.Contains(p.Error, "tls1.3: the certificate could not be fetched") {
		t.Errorf("error %q, want the missing certificate named", p.Error)
	}
}

// TestNothingAcceptedIsAnError: a TLS server that refuses every hello is
// an error naming what was offered and how it refused, never a port that
// accepts nothing.
func TestNothingAcceptedIsAnError(t *testing.T) {
	f := &fakeServer{t: t, suites: map[uint16][]uint16{versionTLS12: {0xff00}}}
	p := probePort(t, f.start())
	want := "no protocol version accepted: SSLv3 to TLSv1.2 were each offered all 331 registered cipher suites, " +
		"TLSv1.3 its 9 suites and 19 groups; the server answered TLSv1.3 alert handshake_failure, TLSv1.2 alert handshake_failure, " +
		"TLSv1.1 alert protocol_version, TLSv1 alert protocol_version, SSLv3 alert protocol_version"
	if p.Error != want || len(p.Protocols) != 0 || p.Connections != 5 {
		t.Errorf("probe %+v\nwant error %q", p, want)
	}
}

// TestHangingUpIsARefusal: some servers close the connection on a hello
// they refuse instead of sending an alert; that is no failure to probe.
func TestHangingUpIsARefusal(t *testing.T) {
	f := &fakeServer{t: t, hangUp: true, cert: testLeaf(t), suites: map[uint16][]uint16{versionTLS12: {0xc02f, 0x009c}}}
	p := probePort(t, f.start())
	if p.Error != "" || !slices.Equal(p.Protocols, []string{"TLSv1.2"}) || len(p.Suites) != 2 {
		t.Errorf("probe %+v, want TLS 1.2 with two suites and no error", p)
	}
}

// TestUnofferedChoiceIsAnError: a server that picks a suite it was not
// offered is broken or not TLS; the probe says which suite and stops.
func TestUnofferedChoiceIsAnError(t *testing.T) {
	f := &fakeServer{t: t, rogue: 0xfefe, suites: map[uint16][]uint16{versionTLS12: {0xfefe}}}
	p := probePort(t, f.start())
	if !strings.Contains(p.Error, "tls1.2: the server chose cipher suite 0xfefe, which was not offered") || p.TLS12Accepted {
		t.Errorf("probe %+v, want the unoffered suite named", p)
	}
}

// TestEnumerationStopsAtTheBound: a server that accepts more suites than
// the bound allows hellos for gets no more connections than it, is said to
// be cut short, and still shows its certificate.
func TestEnumerationStopsAtTheBound(t *testing.T) {
	loadSuites()
	f := &fakeServer{t: t, cert: testLeaf(t), suites: map[uint16][]uint16{versionTLS12: suites12, versionTLS11: suites12}}
	p := probePort(t, f.start())
	// The hellos take all but the connection kept for a TLS 1.3
	// certificate, which this server, with its certificate in the clear,
	// never needs.
	if want := maxConnectionsPerPort - 1; p.Connections != want || int(f.conns.Load()) != want {
		t.Errorf("%d connections recorded, %d made, want %d", p.Connections, f.conns.Load(), want)
	}
	want := "the enumeration was cut short at the bound of 96 connections per port, before it finished "
	if !strings.HasPrefix(p.Error, want) || !strings.Contains(p.Error, "tls1.2 cipher suites") {
		t.Errorf("error %q, want it to start %q", p.Error, want)
	}
	if !p.TLS12Accepted || !p.TLS11Accepted || p.Certificate == nil {
		t.Errorf("probe %+v: the versions and the certificate must survive the bound", p)
	}
}

// TestSilentServerTimesOut: a server that takes the hello and never
// answers costs each version one timeout, the first one included, and is
// reported as such on a TLS port.
func TestSilentServerTimesOut(t *testing.T) {
	port, conns := silentServer(t)
	p := &prober{timeout: 300 * time.Millisecond, sem: make(chan struct{}, 4)}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	done := make(chan *facts.TLSProbe)
	go func() { done <- p.listener(context.Background(), probeTarget{listen: addr, dial: addr, port: 443}) }()
	select {
	case r := <-done:
		for _, v := range []string{"tls1.3", "tls1.2", "tls1.1", "tls1.0", "ssl3"} {
			if !strings.Contains(r.Error, v+": timed out: connected, but no ServerHello within 300ms") {
				t.Errorf("error %q does not name the %s timeout", r.Error, v)
			}
		}
		if r.Connections != 5 || conns.Load() != 5 {
			t.Errorf("%d connections recorded, %d made, want one a version", r.Connections, conns.Load())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the probe of a silent server did not end")
	}
}

// silentServer reads whatever it is sent and never answers.
func silentServer(t *testing.T) (int, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			go func() {
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, &n
}
