package tls

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// chainServer is an openssl s_server that sends a chain the test made, and
// the files the peer's verdict is asked with.
type chainServer struct {
	port                  int
	root, leaf, untrusted string // untrusted: what the server sends after the leaf; "" when nothing
}

// serveChain starts s_server with leaf, its key and sent after it, as
// given (-cert_chain, no chain built from any store), with args.
func serveChain(t *testing.T, root, leaf *issued, sent []*issued, args ...string) chainServer {
	t.Helper()
	dir := t.TempDir()
	keyDER, err := x509.MarshalPKCS8PrivateKey(leaf.key)
	if err != nil {
		t.Fatal(err)
	}
	var chain []byte
	for _, c := range sent {
		chain = append(chain, c.pem()...)
	}
	s := chainServer{root: filepath.Join(dir, "root.pem"), leaf: filepath.Join(dir, "leaf.pem")}
	files := map[string][]byte{s.root: root.pem(), s.leaf: leaf.pem(),
		filepath.Join(dir, "key.pem"): pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}
	if len(sent) > 0 {
		s.untrusted = filepath.Join(dir, "sent.pem")
		files[s.untrusted] = chain
		args = append(args, "-cert_chain", s.untrusted)
	}
	for name, data := range files {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args = append(args, "-no-CAfile", "-no-CApath", "-no-CAstore")
	s.port = sServerFiles(t, s.leaf, filepath.Join(dir, "key.pem"), args...)
	return s
}

// peerVerifies asks OpenSSL whether a client trusting root alone accepts
// the leaf, with what the server sent after it as untrusted intermediates,
// for a TLS server: `openssl verify -purpose sslserver`.
func (s chainServer) peerVerifies(t *testing.T) (bool, string) {
	t.Helper()
	args := []string{"verify", "-CAfile", s.root, "-purpose", "sslserver"}
	if s.untrusted != "" {
		args = append(args, "-untrusted", s.untrusted)
	}
	out, err := exec.Command(testutil.Tool(t, "openssl", "openssl"), append(args, s.leaf)...).CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("openssl verify: %v", err)
	}
	return err == nil, strings.TrimSpace(string(out))
}

// probeChain probes the server as a wildcard listener of a target whose CA
// bundle, at Debian's path, holds root.
func probeChain(t *testing.T, port int, root *issued) facts.TLSProbe {
	t.Helper()
	f := listening(facts.Listener{Proto: "tcp", Address: "0.0.0.0", Port: port})
	dir := storeDir(t, "etc/ssl/certs/ca-certificates.crt", root.pem())
	if err := collectOne(t, collecttest.NewEnv(t, dir, true), f, "tls_probe"); err != nil {
		t.Fatal(err)
	}
	if err := facts.Validate(*f); err != nil {
		t.Errorf("probe facts do not validate: %v", err)
	}
	if len(f.TLS.Probes) != 1 {
		t.Fatalf("probes %+v, want one", f.TLS.Probes)
	}
	return f.TLS.Probes[0]
}

var certParams = map[string]any{"tls_cert_min_days": 30}

const bundle = "/etc/ssl/certs/ca-certificates.crt"

// chainPaths are the probe's three ways to a certificate, as s_server is
// told to force each: the TLS 1.2 flight in the clear, Go's TLS 1.3 client,
// and the probe's own ffdhe exchange.
var chainPaths = map[string][]string{
	"tls1.2":       {"-tls1_2"},
	"tls1.3 go":    {"-tls1_3"},
	"tls1.3 ffdhe": {"-tls1_3", "-groups", "ffdhe2048"},
}

// chainCase is one chain served: what the test changes in a sound chain,
// what the server sends after the leaf (the intermediate when nil), and
// what the probe and the checks must make of it.
type chainCase struct {
	name, key, path string
	change          func(*chainSpec)
	sent            func(root, inter *issued) []*issued
	want            func(addr string, s *chainSpec) chainWant
}

var chainCases = []chainCase{
	{"sound rsa", "rsa", "tls1.2", nil, nil, soundChain},
	{"sound rsa", "rsa", "tls1.3 go", nil, nil, soundChain},
	{"sound rsa", "rsa", "tls1.3 ffdhe", nil, nil, soundChain},
	{"sound ec", "ec", "tls1.2", nil, nil, soundChain},
	{"sound ec", "ec", "tls1.3 go", nil, nil, soundChain},
	{"sound ec", "ec", "tls1.3 ffdhe", nil, nil, soundChain},
	{"root sent too", "ec", "tls1.3 go", nil, func(root, inter *issued) []*issued { return []*issued{inter, root} }, func(string, *chainSpec) chainWant {
		return chainWant{links: []string{"issued_by_next", "issued_by_next", "self_signed"}, verified: true}
	}},
	{"leaf not yet valid", "ec", "tls1.3 go", func(s *chainSpec) {
		s.leaf.NotBefore = time.Now().Add(73 * time.Hour).Truncate(time.Second)
	}, nil, func(addr string, s *chainSpec) chainWant {
		return chainWant{links: []string{"issued_by_next", "store"}, deny005: []string{
			fmt.Sprintf("%s: certificate 0 (CN=gpuhost test leaf): not valid until %s, 3 days after the scan", addr, s.leaf.NotBefore.UTC().Format(time.RFC3339)),
		}, deny008: []string{addr + ": the chain does not verify against " + bundle + ": x509: certificate has expired or is not yet valid"}}
	}},
	{"expired intermediate", "rsa", "tls1.2", func(s *chainSpec) {
		s.inter.NotBefore = time.Now().Add(-2 * 365 * 24 * time.Hour).Truncate(time.Second)
		s.inter.NotAfter = time.Now().Add(-73 * time.Hour).Truncate(time.Second)
	}, nil, func(addr string, s *chainSpec) chainWant {
		return chainWant{links: []string{"issued_by_next", "store"}, deny005: []string{
			fmt.Sprintf("%s: certificate 1 (CN=gpuhost test intermediate): expired on %s, 3 days before the scan", addr, s.inter.NotAfter.UTC().Format(time.RFC3339)),
		}, deny008: []string{addr + ": the chain does not verify against " + bundle + ": x509: "}}
	}},
	{"leaf for clients only", "ec", "tls1.3 ffdhe", func(s *chainSpec) {
		s.leaf.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}, nil, func(addr string, _ *chainSpec) chainWant {
		return chainWant{links: []string{"issued_by_next", "store"}, deny005: []string{
			addr + ": certificate 0 (CN=gpuhost test leaf): extendedKeyUsage clientAuth leaves out serverAuth, so clients refuse it as a TLS server's certificate",
		}, deny008: []string{addr + ": the chain does not verify against " + bundle + ": x509: certificate specifies an incompatible key usage"}}
	}},
	{"out of order", "rsa", "tls1.2", nil, func(root, inter *issued) []*issued { return []*issued{root, inter} }, func(addr string, _ *chainSpec) chainWant {
		return chainWant{links: []string{"wrong_issuer", "self_signed", "store"}, verified: true, deny008: []string{
			addr + ": certificate 1 (CN=gpuhost test root) is a self-signed root, yet certificates follow it",
			addr + ": certificate 1 (CN=gpuhost test root) is not the issuer of certificate 0 (CN=gpuhost test leaf), which names CN=gpuhost test intermediate",
		}}
	}},
	{"intermediate missing", "ec", "tls1.3 go", nil, func(*issued, *issued) []*issued { return nil }, func(addr string, _ *chainSpec) chainWant {
		return chainWant{links: []string{"missing"}, deny008: []string{
			addr + ": certificate 0 (CN=gpuhost test leaf) was sent without its issuer CN=gpuhost test intermediate, which the trust store " + bundle + " does not hold either",
			addr + ": the chain does not verify against " + bundle + ": x509: certificate signed by unknown authority",
		}}
	}},
}

// TestChainsAgainstOpenSSL serves chains made here from openssl s_server,
// over each of the probe's ways to a certificate, and checks the facts,
// GH-TLS-005's and GH-TLS-008's verdicts on them, and that whether the chain
// verified agrees with `openssl verify -purpose sslserver` given the same
// root and what the server sent.
func TestChainsAgainstOpenSSL(t *testing.T) {
	for _, tc := range chainCases {
		t.Run(tc.name+" "+tc.path, func(t *testing.T) { tc.check(t) })
	}
}

func (tc chainCase) check(t *testing.T) {
	t.Helper()
	spec := newChainSpec(t, tc.key)
	if tc.change != nil {
		tc.change(spec)
	}
	root, inter, leaf := spec.build(t)
	sent := []*issued{inter}
	if tc.sent != nil {
		sent = tc.sent(root, inter)
	}
	srv := serveChain(t, root, leaf, sent, chainPaths[tc.path]...)
	p := probeChain(t, srv.port, root)
	wantNoError(t, p)
	w := tc.want(p.Address, spec)
	all := append([]*issued{leaf}, sent...)
	if len(p.Chain) != len(all) {
		t.Fatalf("a chain of %d certificates, want the %d sent: %+v", len(p.Chain), len(all), p.Chain)
	}
	var links []string
	for i, c := range p.Chain {
		links = append(links, c.Link)
		if want := all[i].cert.Subject.String(); c.Subject != want || c.Depth != i {
			t.Errorf("certificate %d is %q at depth %d, want %q: the chain as sent", i, c.Subject, c.Depth, want)
		}
	}
	if !slices.Equal(links, w.links) {
		t.Errorf("links %v, want %v", links, w.links)
	}
	v := p.Verification
	if v == nil || v.Store != bundle || v.StoreError != "" || v.Verified != w.verified {
		t.Fatalf("verification %+v, want verified %v against %s", v, w.verified, bundle)
	}
	peer, out := srv.peerVerifies(t)
	if peer != v.Verified {
		t.Errorf("the probe's chain verified %v (%s), openssl verify -purpose sslserver %v: %s", v.Verified, v.Error, peer, out)
	}
	if deny, errs := verdict(t, p, "probe_certificate", certParams); !slices.Equal(deny, w.deny005) || errs != nil {
		t.Errorf("GH-TLS-005: deny\n%s\nerrors %q, want\n%s", strings.Join(deny, "\n"), errs, strings.Join(w.deny005, "\n"))
	}
	deny, errs := verdict(t, p, "probe_chain", map[string]any{})
	ok := len(deny) == len(w.deny008) && errs == nil
	for i := range w.deny008 {
		ok = ok && strings.HasPrefix(deny[i], w.deny008[i])
	}
	if !ok {
		t.Errorf("GH-TLS-008: deny\n%s\nerrors %q, want messages that start\n%s", strings.Join(deny, "\n"), errs, strings.Join(w.deny008, "\n"))
	}
}

// chainWant is what a chain's probe must show.
type chainWant struct {
	links    []string
	verified bool
	deny005  []string
	deny008  []string // each a prefix of one message, in order
}

func soundChain(string, *chainSpec) chainWant {
	return chainWant{links: []string{"issued_by_next", "store"}, verified: true}
}

// TestChainOverTheBound: a server that sends more certificates than the
// probe keeps, here to Go's TLS 1.3 client, leaves its listener with an
// error that the checks report by its address, and no certificate.
func TestChainOverTheBound(t *testing.T) {
	root, inter, leaf := newChainSpec(t, "ec").build(t)
	srv := serveChain(t, root, leaf, slices.Repeat([]*issued{inter}, maxChainCertificates), "-tls1_3")
	p := probeChain(t, srv.port, root)
	want := "tls1.3: the certificate could not be fetched: the server sent 11 certificates, more than 10: over the probe's bound on certificate chains"
	if p.Error != want || p.Certificate != nil || p.Chain != nil || p.Verification != nil {
		t.Errorf("probe error %q, certificate %+v, chain %+v; want %q and nothing kept", p.Error, p.Certificate, p.Chain, want)
	}
	for check, params := range map[string]map[string]any{"probe_certificate": certParams, "probe_chain": {}} {
		if _, errs := verdict(t, p, check, params); !slices.Equal(errs, []string{p.Address + " could not be fully probed, so its verdict is unknown: " + want}) {
			t.Errorf("%s: errors %q, want the listener named", check, errs)
		}
	}
}

// TestMustStapleWithoutStapling: a must-staple leaf (RFC 7633) served
// without a stapled OCSP response is one Firefox refuses, and no check
// judged it. s_server with such a leaf, at TLS 1.2 (the probe's own hello
// asks, and reads CertificateStatus in the clear) and at TLS 1.3 (Go's
// client asks), without -status_file and with one: GH-TLS-005 fails the
// first and passes the second, as s_client -status sees it.
func TestMustStapleWithoutStapling(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t)
	certPath, keyPath, pair := testutil.WriteCert(t, dir, testutil.CertSpec{CA: ca, MustStaple: true, DNS: []string{"localhost"}})
	resp := filepath.Join(dir, "ocsp.der")
	ca.OCSPResponse(t, pair.Certificate[0], resp)
	for _, c := range []struct {
		name    string
		args    []string
		stapled bool
	}{
		{"TLS 1.2 without a response", []string{"-tls1_2"}, false},
		{"TLS 1.2 with a response", []string{"-tls1_2", "-status_file", resp}, true},
		{"TLS 1.3 without a response", []string{"-tls1_3"}, false},
		{"TLS 1.3 with a response", []string{"-tls1_3", "-status_file", resp}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			port := sServerFiles(t, certPath, keyPath, c.args...)
			p := probeWildcard(t, port)
			if len(p.Chain) == 0 || !p.Chain[0].MustStaple {
				t.Fatalf("chain %+v, want a must-staple leaf", p.Chain)
			}
			if p.OCSPStapled == nil || *p.OCSPStapled != c.stapled {
				t.Errorf("stapled %v, want %v", p.OCSPStapled, c.stapled)
			}
			out, _ := runPeer(20*time.Second, "openssl", "s_client", "-connect", "127.0.0.1:"+strconv.Itoa(port), "-status", "-noservername")
			if peer := !strings.Contains(out, "OCSP response: no response sent"); peer != c.stapled || !strings.Contains(out, "OCSP") {
				t.Errorf("s_client -status says stapled %v:\n%s", peer, out)
			}
			deny, _ := verdict(t, p, "probe_certificate", map[string]any{"tls_cert_min_days": 0})
			said := slices.ContainsFunc(deny, func(m string) bool { return strings.Contains(m, "carries must-staple") })
			if said == c.stapled {
				t.Errorf("GH-TLS-005 deny %q: must-staple named %v, want %v", deny, said, !c.stapled)
			}
		})
	}
}

// TestCrossSignedRootVerifies: during a root's transition a server sends
// the new root cross-signed by the old one after its intermediate, for
// clients that lack the new root; a client that holds the new root
// anchors there. The cross-signed certificate's issuer, the old root, is
// in no store, and GH-TLS-008 called the chain incomplete although it
// verifies (a false fail). It is an anchor now, as openssl verify agrees.
func TestCrossSignedRootVerifies(t *testing.T) {
	spec := newChainSpec(t, "ec")
	root, inter, leaf := spec.build(t)
	old := issue(t, caTemplate("gpuhost test old root", 10*365*24*time.Hour), newTestKey(t, "ec"), nil)
	crossTmpl := caTemplate("gpuhost test root", 5*365*24*time.Hour)
	crossTmpl.Subject = root.cert.Subject
	cross := issue(t, crossTmpl, spec.rootKey, old)
	for path, args := range chainPaths {
		t.Run(path, func(t *testing.T) {
			srv := serveChain(t, root, leaf, []*issued{inter, cross}, args...)
			if ok, out := srv.peerVerifies(t); !ok {
				t.Fatalf("openssl verify refuses the cross-signed chain: %s", out)
			}
			p := probeChain(t, srv.port, root)
			var links []string
			for _, c := range p.Chain {
				links = append(links, c.Link)
			}
			if !slices.Equal(links, []string{"issued_by_next", "issued_by_next", "store"}) || p.Verification == nil || !p.Verification.Verified {
				t.Errorf("links %v, verification %+v; want the cross-signed root anchored and the chain verified", links, p.Verification)
			}
			if deny, errs := verdict(t, p, "probe_chain", nil); deny != nil || errs != nil {
				t.Errorf("GH-TLS-008: deny %q, errors %q; want a pass", deny, errs)
			}
		})
	}
}
