package tls

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// tripleDESServer serves TLS 1.2 alone with 3DES beside an AEAD suite:
// openssl s_server where its libssl still has 3DES, else Go's crypto/tls,
// which does (Debian's OpenSSL 3 has none).
func tripleDESServer(t *testing.T) (port int, by string) {
	t.Helper()
	openssl := testutil.Tool(t, "openssl", "openssl")
	const ciphers = "DES-CBC3-SHA:ECDHE-RSA-AES128-GCM-SHA256:@SECLEVEL=0"
	if exec.Command(openssl, "ciphers", ciphers).Run() == nil &&
		strings.Contains(testutil.Run(t, 30*time.Second, openssl, "ciphers", ciphers), "DES-CBC3-SHA") {
		return sServer(t, loopbackCert, "-tls1_2", "-cipher", ciphers), "openssl s_server"
	}
	t.Logf("%s has no 3DES; Go's crypto/tls serves it", strings.TrimSpace(testutil.Run(t, 30*time.Second, openssl, "version")))
	_, _, cert := testutil.WriteCert(t, t.TempDir(), loopbackCert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert},
		CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go acceptHandshakes(ln)
	return ln.Addr().(*net.TCPAddr).Port, "crypto/tls"
}

// TestSMTPStartTLSWith3DES: an SMTP port whose STARTTLS leads to TLS 1.2
// with 3DES was dropped for its greeting and never judged. It is probed
// after EHLO and STARTTLS on every connection, judged as any TLS port;
// sslscan's own STARTTLS scan sees the same suites, and OpenSSL's client
// settles on one of them at TLS 1.2.
func TestSMTPStartTLSWith3DES(t *testing.T) {
	backend, by := tripleDESServer(t)
	t.Logf("TLS served by %s", by)
	fr := startFront(t, "smtp", backend, true)
	f := listening(facts.Listener{Proto: "tcp", Address: "0.0.0.0", Port: fr.port, Process: "master"})
	if err := collectOne(t, collecttest.NewEnv(t, t.TempDir(), true), f, "tls_probe"); err != nil {
		t.Fatal(err)
	}
	if err := facts.Validate(*f); err != nil {
		t.Errorf("probe facts do not validate: %v", err)
	}
	if len(f.TLS.Probes) != 1 {
		t.Fatalf("probes %+v, not judged %+v: want the SMTP port probed", f.TLS.Probes, f.NotJudged)
	}
	p := f.TLS.Probes[0]
	wantNoError(t, p)
	if p.StartTLS != "smtp" || !slices.Equal(p.Protocols, []string{"TLSv1.2"}) || !slices.Contains(p.WeakSuites, "TLS_RSA_WITH_3DES_EDE_CBC_SHA") {
		t.Errorf("probe %+v, want TLS 1.2 with 3DES through smtp STARTTLS", p)
	}
	if c := p.Certificate; c == nil || c.KeyType != "RSA" {
		t.Errorf("certificate %+v, want the server's RSA leaf", c)
	}
	// Every connection but the first, which heard the greeting, made the
	// preamble before its hello.
	if a, u := fr.accepted.Load(), fr.upgraded.Load(); int(a) != p.Connections-unreachableViews(p) || int(u) != int(a)-1 {
		t.Errorf("the front accepted %d connections and upgraded %d; the probe counted %d", a, u, p.Connections)
	}
	if p.Connections > maxConnectionsPerPort*3/4 {
		t.Errorf("%d connections, over three quarters of the bound %d", p.Connections, maxConnectionsPerPort)
	}
	t.Logf("%d connections for %d suites", p.Connections, len(p.Suites))
	label := fmt.Sprintf("0.0.0.0:%d (smtp STARTTLS)", fr.port)
	if deny, errs := verdict(t, p, "probe_tls12", tls12Weak); !slices.Equal(deny, []string{label + " accepts a TLS 1.2 handshake"}) || errs != nil {
		t.Errorf("GH-TLS-003: deny %q, errors %q", deny, errs)
	}
	deny, errs := verdict(t, p, "probe_cipher_suites", tls12Allowed)
	if !slices.Contains(deny, label+" accepts TLS_RSA_WITH_3DES_EDE_CBC_SHA: 3DES, a 64-bit block cipher (Sweet32)") || errs != nil {
		t.Errorf("GH-TLS-006: deny %q, errors %q, want 3DES named", deny, errs)
	}
	agreeWithSslscan(t, p, fr.port, "--starttls-smtp")
	agreeWithSClient(t, p, "smtp", fr.port)
}

// wellKnown are the ports that name a protocol whose server waits for
// the client: its preamble starts at once.
var wellKnown = map[string]int{"ldap": 389, "postgres": 5432}

// probeFront probes a front as the listener it stands for: a server that
// greets on its own port, one that waits for the client as if on its
// well-known port.
func probeFront(t *testing.T, proto string, fr *front) (*facts.TLSProbe, *prober) {
	t.Helper()
	p := &prober{timeout: 2 * time.Second, sem: make(chan struct{}, 4)}
	port := fr.port
	if wk, ok := wellKnown[proto]; ok {
		port = wk
	}
	addr := "127.0.0.1:" + strconv.Itoa(fr.port)
	return p.listener(context.Background(), probeTarget{listen: addr, dial: addr, port: port}), p
}

// TestStartTLSProtocols probes each protocol's upgrade, spoken as its
// daemons speak it, to a TLS 1.2 and 1.3 s_server; OpenSSL's client makes
// the same upgrade and lands on what the probe found, and sslscan's
// STARTTLS scan finds the same versions, suites and groups.
func TestStartTLSProtocols(t *testing.T) {
	backend := sServer(t, loopbackCert)
	for _, proto := range []string{"smtp", "imap", "pop3", "ftp", "ldap", "postgres", "mysql"} {
		t.Run(proto, func(t *testing.T) {
			fr := startFront(t, proto, backend, true)
			r, _ := probeFront(t, proto, fr)
			if r == nil {
				t.Fatal("not taken for a TLS listener")
			}
			wantNoError(t, *r)
			wantPeerCertificate(t, *r)
			if r.StartTLS != proto || !slices.Equal(r.Protocols, []string{"TLSv1.2", "TLSv1.3"}) {
				t.Errorf("starttls %q protocols %v, want %s to TLS 1.2 and 1.3", r.StartTLS, r.Protocols, proto)
			}
			heard := 1 // the first connection heard the greeting
			if _, ok := wellKnown[proto]; ok {
				heard = 0
			}
			if a, u := fr.accepted.Load(), fr.upgraded.Load(); int(a) != r.Connections || int(u) != r.Connections-heard {
				t.Errorf("the front accepted %d connections and upgraded %d; the probe counted %d", a, u, r.Connections)
			}
			agreeWithSClient(t, *r, proto, fr.port)
			if proto == "ldap" && !sslscanFixedLDAP(t) {
				// sslscan before 2.0.8 looks for the StartTLS OID in the
				// response with strstr, which stops at the result code's
				// zero byte, and fails on every server that agrees
				// (rbsec/sslscan#167).
				t.Log("this sslscan cannot read an LDAP StartTLS response; s_client alone checks the port")
				return
			}
			agreeWithSslscan(t, *r, fr.port, "--starttls-"+strings.Replace(proto, "postgres", "psql", 1))
		})
	}
}

// sslscanFixedLDAP reports whether sslscan is 2.0.8 or later, which reads
// an LDAP StartTLS response whole.
func sslscanFixedLDAP(t *testing.T) bool {
	t.Helper()
	out := testutil.Run(t, 30*time.Second, testutil.Tool(t, "sslscan", "sslscan"), "--no-colour", "--version")
	for _, f := range strings.Fields(out) {
		var major, minor, patch int
		if n, _ := fmt.Sscanf(f, "%d.%d.%d", &major, &minor, &patch); n == 3 {
			return major > 2 || major == 2 && (minor > 0 || patch >= 8)
		}
	}
	t.Fatalf("no version in sslscan --version:\n%s", out)
	return false
}

// agreeWithSClient has openssl s_client upgrade the port and checks that
// the version and suite it settled on are among what the probe found.
func agreeWithSClient(t *testing.T, r facts.TLSProbe, proto string, port int) {
	t.Helper()
	openssl := testutil.Tool(t, "openssl", "openssl")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, openssl, "s_client", "-brief", "-starttls", proto,
		"-connect", "127.0.0.1:"+strconv.Itoa(port)).CombinedOutput()
	text := string(out)
	var version, suite string
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, "Protocol version: "); ok {
			version = strings.TrimSpace(v)
		}
		if s, ok := strings.CutPrefix(l, "Ciphersuite: "); ok {
			suite = ianaName(t, strings.TrimSpace(s))
		}
	}
	if version == "" || suite == "" {
		t.Fatalf("openssl s_client -starttls %s: %v\n%s", proto, err, text)
	}
	if !slices.Contains(r.Protocols, version) || !slices.Contains(suitesAt(r, version), suite) {
		t.Errorf("s_client -starttls %s settled on %s %s, which the probe did not find: %v %v", proto, version, suite, r.Protocols, r.Suites)
	} else {
		t.Logf("s_client -starttls %s settled on %s %s, as the probe found", proto, version, suite)
	}
}

// TestStartTLSNotOffered: a service that speaks the protocol and offers
// no TLS is no TLS port, and is noted as not judged with what it said.
func TestStartTLSNotOffered(t *testing.T) {
	want := map[string]string{
		"smtp":     "not TLS: smtp that offers no TLS: the EHLO reply offers no STARTTLS",
		"imap":     "not TLS: imap that offers no TLS: the CAPABILITY reply offers no STARTTLS",
		"pop3":     `not TLS: pop3 that offers no TLS: STLS answered "-ERR Unknown command: STLS"`,
		"ftp":      `not TLS: ftp that offers no TLS: AUTH TLS answered 530 "Please login with USER and PASS."`,
		"ldap":     `not TLS: ldap that offers no TLS: StartTLS answered result code 2 "unsupported extended operation"`,
		"postgres": "not TLS: postgres that offers no TLS: the SSLRequest was answered N (ssl is off)",
		"mysql":    `not TLS: mysql that offers no TLS: the greeting of server "8.0.36-gpuhost-test" lacks CLIENT_SSL`,
	}
	for proto, what := range want {
		t.Run(proto, func(t *testing.T) {
			fr := startFront(t, proto, 0, false)
			r, p := probeFront(t, proto, fr)
			if r != nil {
				t.Errorf("taken for a TLS listener: %+v", r)
			}
			line := fmt.Sprintf("127.0.0.1:%d/tcp: %s", fr.port, what)
			if !slices.Equal(p.notJudged, []string{line}) {
				t.Errorf("not judged %q, want %q", p.notJudged, line)
			}
			if n := fr.accepted.Load(); n > 2 {
				t.Errorf("%d connections to a port with no TLS, want at most 2", n)
			}
		})
	}
}

// TestSlowSMTPGreeterOnItsPort: an SMTP server that greets only after the
// probe's wait heard a TLS hello instead of EHLO; on port 25 it is still
// taken for SMTP and upgraded.
func TestSlowSMTPGreeterOnItsPort(t *testing.T) {
	backend := tlsServer(t, tls.VersionTLS13, 0)
	for _, port := range []int{25, 0} {
		fr := startFrontAfter(t, "smtp", backend, true, 2*serverFirstWait)
		p := &prober{timeout: time.Second, sem: make(chan struct{}, 4)}
		addr := "127.0.0.1:" + strconv.Itoa(fr.port)
		r := p.listener(context.Background(), probeTarget{listen: addr, dial: addr, port: cmp.Or(port, fr.port)})
		switch {
		case port == 25 && (r == nil || r.StartTLS != "smtp" || r.Error != "" || !r.TLS13Accepted):
			t.Errorf("on port 25: probe %+v, not judged %q: want TLS through smtp STARTTLS", r, p.notJudged)
		case port == 0 && (r != nil || len(p.notJudged) != 1):
			// On any other port the same server is not taken for SMTP.
			t.Errorf("on its own port: probe %+v, not judged %q", r, p.notJudged)
		}
	}
}

// TestStartTLSFor tells the protocol by greeting first and port second.
func TestStartTLSFor(t *testing.T) {
	mysql := append([]byte{0x4a, 0, 0, 0, 10}, "8.0.36\x00"...)
	for _, tc := range []struct {
		port     int
		greeting string
		want     string
	}{
		{25, "220 mx.example ESMTP Postfix (Debian/GNU)\r\n", "smtp"},
		{2525, "220 mx.example ESMTP\r\n", "smtp"},
		{10025, "220 ftp.example.com ESMTP Exim 4.96\r\n", "smtp"},
		{10021, "220 (vsFTPd 3.0.3)\r\n", "ftp"},
		{21, "220 Service ready\r\n", "ftp"},
		{25, "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n", ""},
		{10143, "* OK [CAPABILITY IMAP4rev1 STARTTLS] Dovecot ready.\r\n", "imap"},
		{10110, "+OK Dovecot ready.\r\n", "pop3"},
		{13306, string(mysql), "mysql"},
		{3306, "\x17\x00\x00\x00\xff\x69\x04Host is not allowed", "mysql"},
		{389, "", "ldap"},
		{5432, "", "postgres"},
		{25, "", ""},
		{8080, "220 something else\r\n", ""},
		{8080, "HTTP/1.1 400 Bad Request\r\n", ""},
	} {
		got := ""
		if s := startTLSFor(tc.port, []byte(tc.greeting)); s != nil {
			got = s.name
		}
		if got != tc.want {
			t.Errorf("port %d greeting %q: %q, want %q", tc.port, tc.greeting, got, tc.want)
		}
	}
}

// TestClientFirstStartTLSOnAnOddPort: LDAP and PostgreSQL wait for their
// client, so on a port other than 389 and 5432 nothing told them apart
// from a service that speaks no TLS, and the port went unjudged. The
// probe now asks a port that answered its hello in no TLS for each
// protocol's upgrade, and judges what the upgrade leads to.
func TestClientFirstStartTLSOnAnOddPort(t *testing.T) {
	backend := sServer(t, loopbackCert)
	for _, proto := range []string{"ldap", "postgres"} {
		t.Run(proto, func(t *testing.T) {
			fr := startFront(t, proto, backend, true)
			p := &prober{timeout: 2 * time.Second, sem: make(chan struct{}, 4)}
			addr := "127.0.0.1:" + strconv.Itoa(fr.port)
			r := p.listener(context.Background(), probeTarget{listen: addr, dial: addr, port: fr.port})
			if r == nil {
				t.Fatalf("not taken for a TLS listener; not judged %q", p.notJudged)
			}
			wantNoError(t, *r)
			wantPeerCertificate(t, *r)
			if r.StartTLS != proto || !slices.Equal(r.Protocols, []string{"TLSv1.2", "TLSv1.3"}) {
				t.Errorf("starttls %q protocols %v, want %s to TLS 1.2 and 1.3", r.StartTLS, r.Protocols, proto)
			}
		})
	}
	// A service that closes on anything it does not understand stays
	// unjudged, as before, after the two preambles.
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
			_, _ = c.Read(make([]byte, 64))
			c.Close()
		}
	}()
	p := &prober{timeout: time.Second, sem: make(chan struct{}, 4)}
	addr := ln.Addr().String()
	if r := p.listener(context.Background(), probeTarget{listen: addr, dial: addr, port: ln.Addr().(*net.TCPAddr).Port}); r != nil {
		t.Errorf("a service that hangs up: probe %+v, want it noted as not TLS", r)
	}
}
