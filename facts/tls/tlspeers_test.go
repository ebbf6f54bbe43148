package tls

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// loopbackCert is a sound self-signed certificate for a loopback peer.
var loopbackCert = testutil.CertSpec{Key: "rsa2048", DNS: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}

// sServer starts `openssl s_server` on a free loopback port with the given
// certificate and extra arguments, and returns the port once it accepts.
func sServer(t *testing.T, cert testutil.CertSpec, args ...string) int {
	t.Helper()
	certPath, keyPath, _ := testutil.WriteCert(t, t.TempDir(), cert)
	return sServerFiles(t, certPath, keyPath, args...)
}

// sServerFiles is sServer with the certificate and key in files.
func sServerFiles(t *testing.T, certPath, keyPath string, args ...string) int {
	t.Helper()
	port, _ := startSServer(t, certPath, keyPath, args...)
	return port
}

func dialable(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// probeOne runs the collector against one loopback listener.
func probeOne(t *testing.T, port int, timeout time.Duration) facts.TLSProbe {
	t.Helper()
	f := listening(facts.Listener{Proto: "tcp", Address: "127.0.0.1", Port: port})
	env := collecttest.NewEnv(t, t.TempDir(), true)
	env.ProbeTimeout = timeout
	if err := collectOne(t, env, f, "tls_probe"); err != nil {
		t.Fatal(err)
	}
	if len(f.TLS.Probes) != 1 {
		t.Fatalf("probes %+v, want one", f.TLS.Probes)
	}
	if err := facts.Validate(*f); err != nil {
		t.Errorf("probe facts do not validate: %v", err)
	}
	return f.TLS.Probes[0]
}

type versions struct{ v10, v11, v12, v13 bool }

func accepted(p facts.TLSProbe) versions {
	return versions{p.TLS10Accepted, p.TLS11Accepted, p.TLS12Accepted, p.TLS13Accepted}
}

func TestTLSProbeCountsAServerThatDemandsAClientCertificate(t *testing.T) {
	port := sServer(t, loopbackCert, "-tls1_2", "-Verify", "1")
	p := probeOne(t, port, 2*time.Second)
	if got := accepted(p); got != (versions{v12: true}) {
		t.Errorf("accepted %+v, want only TLS 1.2 (the ServerHello chose it before the client certificate was refused)", got)
	}
	if p.Error != "" {
		t.Errorf("error %q: a refusal for want of a client certificate is an answer", p.Error)
	}
	if c := p.Certificate; c == nil || c.Subject != "CN=gpuhost test peer" || c.KeyType != "RSA" || c.KeyBits != 2048 || !c.SelfSigned {
		t.Errorf("certificate %+v, want the peer's RSA 2048 self-signed leaf", c)
	}
}

func TestTLSProbeLegacyOnlyServerAgreesWithSslscan(t *testing.T) {
	port := sServer(t, loopbackCert, "-no_tls1_2", "-no_tls1_3", "-cipher", "DEFAULT@SECLEVEL=0")
	p := probeOne(t, port, 2*time.Second)
	if got := accepted(p); got != (versions{v10: true, v11: true}) {
		t.Errorf("probe accepted %+v, want TLS 1.0 and 1.1 only", got)
	}
	if len(p.WeakSuites) == 0 {
		t.Errorf("a TLS 1.1 server with OpenSSL's default suites showed no CBC-SHA1 suite")
	}
	agreeWithSslscan(t, p, port)
}

func TestTLSProbeRecordsAnExpiredWeakCertificate(t *testing.T) {
	expired := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	port := sServer(t, testutil.CertSpec{Key: "rsa1024", SHA1: true, NotAfter: expired},
		"-tls1_2", "-cipher", "DEFAULT@SECLEVEL=0")
	p := probeOne(t, port, 2*time.Second)
	want := facts.TLSCertificate{
		Subject: "CN=gpuhost test peer", Issuer: "CN=gpuhost test peer",
		NotBefore: expired.Add(-2 * 365 * 24 * time.Hour).UTC().Format(time.RFC3339), NotAfter: expired.UTC().Format(time.RFC3339),
		KeyType: "RSA", KeyBits: 1024, SignatureAlgorithm: "SHA1-RSA", SANs: []string{}, SelfSigned: true,
	}
	c := p.Certificate
	if c == nil {
		t.Fatal("no certificate recorded")
	}
	// Two days gone, counted by the probe's clock a moment after.
	if left := c.SecondsLeft; left > -48*3600 || left < -48*3600-60 {
		t.Errorf("seconds left %d, want about %d", left, -48*3600)
	}
	// Valid from two years before it expired: two years and two days old.
	if age := c.AgeSeconds; age < (2*365+2)*24*3600 || age > (2*365+2)*24*3600+60 {
		t.Errorf("age %d s, want about %d", age, (2*365+2)*24*3600)
	}
	got := *c
	got.SecondsLeft, got.AgeSeconds = 0, 0
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("certificate %+v, want %+v", c, want)
	}
}

func TestTLSProbeOffersStaticRSASuitesToOpenSSL(t *testing.T) {
	// Only static-RSA suites: the server can agree to nothing else, so
	// a handshake shows that the probe's hello really offered them.
	port := sServer(t, loopbackCert, "-tls1_2", "-cipher", "AES128-SHA:AES256-GCM-SHA384:@SECLEVEL=0")
	p := probeOne(t, port, 2*time.Second)
	want := []string{"TLS_RSA_WITH_AES_128_CBC_SHA", "TLS_RSA_WITH_AES_256_GCM_SHA384"}
	if !p.TLS12Accepted || strings.Join(p.WeakSuites, ",") != strings.Join(want, ",") {
		t.Errorf("probe %+v, want TLS 1.2 with weak suites %v", p, want)
	}
}

// stallServer answers the first connection by relaying it to a Go TLS
// server and holds every later one open in silence, as a listener behind a
// stalled worker pool does.
func stallServer(t *testing.T) int {
	t.Helper()
	backend := tlsServer(t, tls.VersionTLS12, 0)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		first := true
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !first {
				t.Cleanup(func() { c.Close() })
				continue
			}
			first = false
			go relay(c, "127.0.0.1:"+strconv.Itoa(backend))
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func relay(c net.Conn, to string) {
	defer c.Close()
	b, err := net.Dial("tcp", to)
	if err != nil {
		return
	}
	defer b.Close()
	go func() { _, _ = io.Copy(b, c) }()
	_, _ = io.Copy(c, b)
}

func TestTLSProbeReportsATLSListenerThatTimesOut(t *testing.T) {
	port := stallServer(t)
	p := probeOne(t, port, 300*time.Millisecond)
	if !strings.Contains(p.Error, "timed out: connected, but no ServerHello within 300ms") {
		t.Errorf("error %q, want a timeout named as such", p.Error)
	}
}

// BenchmarkProbe50Listeners probes 50 Go TLS servers on loopback, each
// accepting TLS 1.0 to 1.3 with an RSA 2048 certificate, with the default
// concurrency: the whole probe of a busy host.
func BenchmarkProbe50Listeners(b *testing.B) {
	_, _, cert := testutil.WriteCert(b, b.TempDir(), loopbackCert)
	f := listening()
	for range 50 {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
			MinVersion: tls.VersionTLS10, Certificates: []tls.Certificate{cert},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { ln.Close() })
		go acceptHandshakes(ln)
		f.Network.Listening = append(f.Network.Listening,
			facts.Listener{Proto: "tcp", Address: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port})
	}
	env := collecttest.NewEnv(b, b.TempDir(), true)
	env.ProbeConcurrency = defaultProbeConcurrency
	for b.Loop() {
		if err := collectOne(b, env, f, "tls_probe"); err != nil {
			b.Fatal(err)
		}
		if len(f.TLS.Probes) != 50 || !f.TLS.Probes[0].TLS10Accepted || f.TLS.Probes[0].Certificate == nil {
			b.Fatalf("probes %d, first %+v", len(f.TLS.Probes), f.TLS.Probes[0])
		}
	}
}

func acceptHandshakes(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.(*tls.Conn).Handshake()
		}()
	}
}

// slowServer listens on a port no TLS service uses by convention and
// answers each connection after delay: in TLS where cert is set, never
// (holding the connection open) where it is not.
func slowServer(t *testing.T, delay time.Duration, cert *tls.Certificate) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				time.Sleep(delay)
				if cert == nil {
					_, _ = io.Copy(io.Discard, c)
					return
				}
				_ = tls.Server(c, &tls.Config{Certificates: []tls.Certificate{*cert}}).Handshake()
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestSlowTLSServerOnAnOddPortIsNoPass: a TLS server that took longer than
// the probe timeout to answer, on a port TLS services do not use by
// convention, was noted as not TLS and judged by no check. Asked once
// more with patience, it is a probe whose error names the time it took,
// and the checks are errors; a service that stays silent is still noted
// as not TLS.
func TestSlowTLSServerOnAnOddPortIsNoPass(t *testing.T) {
	_, _, cert := testutil.WriteCert(t, t.TempDir(), loopbackCert)
	port := slowServer(t, 800*time.Millisecond, &cert)
	p := probeOne(t, port, 300*time.Millisecond)
	if !strings.Contains(p.Error, "the server answered a TLS hello only after") || !strings.Contains(p.Error, "--probe-timeout above") {
		t.Errorf("probe %+v, want an error naming the slow answer", p)
	}
	if _, errs := verdict(t, p, "probe_loopback", map[string]any{"tls_loopback_severity": "medium"}); len(errs) != 1 {
		t.Errorf("GH-TLS-007 errors %q, want the slow port's", errs)
	}

	silent := slowServer(t, time.Hour, nil)
	f := listening(facts.Listener{Proto: "tcp", Address: "127.0.0.1", Port: silent})
	env := collecttest.NewEnv(t, t.TempDir(), true)
	env.ProbeTimeout = 200 * time.Millisecond
	if err := collectOne(t, env, f, "tls_probe"); err != nil {
		t.Fatal(err)
	}
	if len(f.TLS.Probes) != 0 || len(f.NotJudged) == 0 {
		t.Errorf("a silent service: probes %+v, not judged %+v; want it noted as not TLS", f.TLS.Probes, f.NotJudged)
	}
}
