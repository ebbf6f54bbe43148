package tls

import (
	"crypto/tls"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// ffdheParams writes OpenSSL's ffdhe2048 parameters for s_server -dhparam.
func ffdheParams(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ffdhe2048.pem")
	testutil.Run(t, 30*time.Second, testutil.Tool(t, "openssl", "openssl"),
		"genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt", "group:ffdhe2048", "-out", out)
	return out
}

func wantNoError(t *testing.T, p facts.TLSProbe) {
	t.Helper()
	if p.Error != "" {
		t.Errorf("probe error %q", p.Error)
	}
}

func wantPeerCertificate(t *testing.T, p facts.TLSProbe) {
	t.Helper()
	if c := p.Certificate; c == nil || c.Subject != "CN=gpuhost test peer" || c.KeyType != "RSA" || c.KeyBits != 2048 {
		t.Errorf("certificate %+v, want the peer's RSA 2048 leaf", c)
	}
}

func suitesAt(p facts.TLSProbe, protocol string) []string {
	var out []string
	for _, s := range p.Suites {
		if s.Protocol == protocol {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestDHEOnlyTLS12: Go's client has no DHE, so such a port looked like no
// TLS at all and passed GH-TLS-003 with its certificate unread.
func TestDHEOnlyTLS12(t *testing.T) {
	port := sServer(t, loopbackCert, "-tls1_2", "-dhparam", ffdheParams(t),
		"-cipher", "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-SHA256")
	p := probeWildcard(t, port)
	wantNoError(t, p)
	wantPeerCertificate(t, p)
	want := []string{"TLS_DHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256"}
	if !slices.Equal(p.Protocols, []string{"TLSv1.2"}) || !p.TLS12Accepted || !slices.Equal(suitesAt(p, "TLSv1.2"), want) {
		t.Errorf("protocols %v suites %v, want TLS 1.2 with %v", p.Protocols, suitesAt(p, "TLSv1.2"), want)
	}
	addr := fmt.Sprintf("0.0.0.0:%d", port)
	if deny, errs := verdict(t, p, "probe_tls12", tls12Weak); !slices.Equal(deny, []string{addr + " accepts a TLS 1.2 handshake"}) || errs != nil {
		t.Errorf("GH-TLS-003: deny %q, errors %q, want it failed", deny, errs)
	}
	if deny, _ := verdict(t, p, "probe_cipher_suites", tls12Allowed); !slices.Equal(deny, []string{
		addr + " accepts TLS_DHE_RSA_WITH_AES_256_CBC_SHA256: CBC with a SHA-256 MAC",
	}) {
		t.Errorf("GH-TLS-006: %q", deny)
	}
	agreeWithSslscan(t, p, port)
}

// TestFFDHEOnlyTLS13: Go's client has no finite-field groups; the probe
// finds the version and the group by HelloRetryRequest and keys ffdhe2048
// itself to read the encrypted certificate.
func TestFFDHEOnlyTLS13(t *testing.T) {
	port := sServer(t, loopbackCert, "-tls1_3", "-groups", "ffdhe2048")
	p := probeWildcard(t, port)
	wantNoError(t, p)
	wantPeerCertificate(t, p)
	if !slices.Equal(p.Protocols, []string{"TLSv1.3"}) || !slices.Equal(p.Groups, []string{"ffdhe2048"}) || len(suitesAt(p, "TLSv1.3")) != 3 {
		t.Errorf("protocols %v groups %v suites %v, want TLS 1.3 over ffdhe2048 with its three default suites", p.Protocols, p.Groups, p.Suites)
	}
	for _, check := range []string{"probe_tls12", "probe_legacy_protocols"} {
		if deny, errs := verdict(t, p, check, tls12Weak); deny != nil || errs != nil {
			t.Errorf("%s: deny %q, errors %q, want a pass", check, deny, errs)
		}
	}
	agreeWithSslscan(t, p, port)
}

// TestFFDHEWithChaChaNamesTheMissingCertificate: ffdhe with ChaCha20 is
// what neither Go's client nor the probe's own exchange can decrypt, so
// the certificate is missing by name and the checks are errors.
func TestFFDHEWithChaChaNamesTheMissingCertificate(t *testing.T) {
	port := sServer(t, loopbackCert, "-tls1_3", "-groups", "ffdhe2048", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256")
	p := probeWildcard(t, port)
	want := "tls1.3: the certificate could not be fetched: the server accepts only groups ffdhe2048 with suites " +
		"TLS_CHACHA20_POLY1305_SHA256, which neither Go's client nor the probe can key"
	if p.Error != want || p.Certificate != nil || !p.TLS13Accepted {
		t.Errorf("probe %+v, want TLS 1.3 and the error %q", p, want)
	}
	if _, errs := verdict(t, p, "probe_tls12", tls12Weak); len(errs) != 1 || !strings.Contains(errs[0], want) {
		t.Errorf("GH-TLS-003 errors %q, want the missing certificate", errs)
	}
	agreeWithSslscan(t, p, port)
}

// weakStreamServer serves ECDHE-RC4, and 3DES, at TLS 1.0 to 1.2. Debian's
// OpenSSL 3 has neither in libssl, legacy provider or not, so where
// s_server cannot, Go's server, which still has both, stands in.
func weakStreamServer(t *testing.T) (port int, by string) {
	t.Helper()
	openssl := testutil.Tool(t, "openssl", "openssl")
	for _, cipher := range []string{"ECDHE-RSA-RC4-SHA", "ECDHE-RSA-DES-CBC3-SHA"} {
		if exec.Command(openssl, "ciphers", cipher+":@SECLEVEL=0").Run() == nil {
			return sServer(t, loopbackCert, "-no_tls1_3", "-cipher", cipher+":@SECLEVEL=0"), "openssl s_server " + cipher
		}
	}
	t.Logf("%s has neither RC4 nor 3DES; Go's crypto/tls serves them", strings.TrimSpace(testutil.Run(t, 30*time.Second, openssl, "version")))
	_, _, cert := testutil.WriteCert(t, t.TempDir(), loopbackCert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert},
		CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_RC4_128_SHA, tls.TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go acceptHandshakes(ln)
	return ln.Addr().(*net.TCPAddr).Port, "crypto/tls"
}

// TestRC4And3DES: RC4 and 3DES fail GH-TLS-006 by class, each suite named.
func TestRC4And3DES(t *testing.T) {
	port, by := weakStreamServer(t)
	t.Logf("served by %s", by)
	p := probeWildcard(t, port)
	wantNoError(t, p)
	var rc4, des3 bool
	for _, s := range p.Suites {
		rc4 = rc4 || s.RC4
		des3 = des3 || s.TripleDES
	}
	if !rc4 && !des3 {
		t.Fatalf("suites %+v: neither RC4 nor 3DES", p.Suites)
	}
	deny, _ := verdict(t, p, "probe_cipher_suites", tls12Allowed)
	text := strings.Join(deny, "\n")
	for _, s := range p.Suites {
		if s.RC4 && !strings.Contains(text, s.Name+": RC4") || s.TripleDES && !strings.Contains(text, s.Name+": 3DES") {
			t.Errorf("GH-TLS-006 does not name %s by class:\n%s", s.Name, text)
		}
	}
	agreeWithSslscan(t, p, port)
}

// TestCBCSHA256Only: a port with no AEAD suite at all, only CBC with
// SHA-256 and SHA-384 MACs, fails GH-TLS-006 naming every suite.
func TestCBCSHA256Only(t *testing.T) {
	port := sServer(t, loopbackCert, "-tls1_2", "-dhparam", ffdheParams(t),
		"-cipher", "AES128-SHA256:AES256-SHA256:DHE-RSA-AES128-SHA256:ECDHE-RSA-AES256-SHA384:@SECLEVEL=0")
	p := probeWildcard(t, port)
	wantNoError(t, p)
	wantPeerCertificate(t, p)
	addr := fmt.Sprintf("0.0.0.0:%d", port)
	want := []string{
		addr + " accepts TLS_DHE_RSA_WITH_AES_128_CBC_SHA256: CBC with a SHA-256 MAC",
		addr + " accepts TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384: CBC with a SHA-384 MAC",
		addr + " accepts TLS_RSA_WITH_AES_128_CBC_SHA256: CBC with a SHA-256 MAC",
		addr + " accepts TLS_RSA_WITH_AES_128_CBC_SHA256: no forward secrecy (static RSA key exchange)",
		addr + " accepts TLS_RSA_WITH_AES_256_CBC_SHA256: CBC with a SHA-256 MAC",
		addr + " accepts TLS_RSA_WITH_AES_256_CBC_SHA256: no forward secrecy (static RSA key exchange)",
	}
	if deny, errs := verdict(t, p, "probe_cipher_suites", tls12Allowed); !slices.Equal(deny, want) || errs != nil {
		t.Errorf("GH-TLS-006: deny\n%s\nerrors %q, want\n%s", strings.Join(deny, "\n"), errs, strings.Join(want, "\n"))
	}
	agreeWithSslscan(t, p, port)
}

// TestCleanTLS13Only passes every probe check, its certificate fetched by
// Go's client.
func TestCleanTLS13Only(t *testing.T) {
	port := sServer(t, loopbackCert, "-tls1_3")
	p := probeWildcard(t, port)
	wantNoError(t, p)
	wantPeerCertificate(t, p)
	if !slices.Equal(p.Protocols, []string{"TLSv1.3"}) || len(p.WeakSuites) != 0 || len(p.Groups) == 0 {
		t.Errorf("probe %+v, want TLS 1.3 alone with no weak suite", p)
	}
	for check, params := range map[string]map[string]any{
		"probe_tls12": tls12Weak, "probe_legacy_protocols": tls12Weak, "probe_cipher_suites": tls12Allowed,
	} {
		if deny, errs := verdict(t, p, check, params); deny != nil || errs != nil {
			t.Errorf("%s: deny %q, errors %q, want a pass", check, deny, errs)
		}
	}
	agreeWithSslscan(t, p, port)
}

// typicalServers are what the connection bound is sized for: OpenSSL's
// defaults, and nginx's default ssl_ciphers, both at TLS 1.2 and 1.3.
var typicalServers = []struct {
	name string
	args []string
}{
	{"openssl s_server defaults", nil},
	{"nginx's default ssl_ciphers", []string{"-cipher", "HIGH:!aNULL:!MD5"}},
}

// TestConnectionsPerPort reports what a typical server costs, and holds it
// inside the bound with room to spare. Behind SMTP STARTTLS the same
// server costs one connection more, the one that heard the greeting.
func TestConnectionsPerPort(t *testing.T) {
	for _, s := range typicalServers {
		port := sServer(t, loopbackCert, s.args...)
		p := probeOne(t, port, 2*time.Second)
		t.Logf("%s: %d connections for %d suites and %d groups at %v", s.name, p.Connections, len(p.Suites), len(p.Groups), p.Protocols)
		if p.Error != "" || p.Connections > maxConnectionsPerPort*3/4 {
			t.Errorf("%s: %d connections (bound %d), error %q", s.name, p.Connections, maxConnectionsPerPort, p.Error)
		}
		fr := startFront(t, "smtp", port, true)
		q := probeOne(t, fr.port, 2*time.Second)
		if q.Error != "" || q.StartTLS != "smtp" || q.Connections != p.Connections+1 || int(fr.accepted.Load()) != q.Connections {
			t.Errorf("%s behind SMTP STARTTLS: %d connections (the front saw %d), error %q; want %d",
				s.name, q.Connections, fr.accepted.Load(), q.Error, p.Connections+1)
		}
	}
}

// BenchmarkProbeTypicalServer probes one s_server with OpenSSL's defaults
// and reports the connections it took.
func BenchmarkProbeTypicalServer(b *testing.B) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		b.Skip("openssl not installed")
	}
	certPath, keyPath, _ := testutil.WriteCert(b, b.TempDir(), loopbackCert)
	port := testutil.FreePort(b)
	proc := testutil.Start(b, exec.Command(openssl, "s_server", "-quiet", "-naccept", "100000", "-accept",
		fmt.Sprintf("127.0.0.1:%d", port), "-cert", certPath, "-key", keyPath))
	proc.WaitFor(b, 10*time.Second, "a listening s_server", func() bool { return dialable(port) || proc.Exited() })
	if proc.Exited() {
		b.Fatalf("s_server exited:\n%s", proc.Output())
	}
	f := listening(facts.Listener{Proto: "tcp", Address: "127.0.0.1", Port: port})
	env := collecttest.NewEnv(b, b.TempDir(), true)
	conns := 0
	for b.Loop() {
		if err := collectOne(b, env, f, "tls_probe"); err != nil {
			b.Fatal(err)
		}
		conns = f.TLS.Probes[0].Connections
	}
	b.ReportMetric(float64(conns), "conns/port")
}
