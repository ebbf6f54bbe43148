package tls

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

// issued is a certificate a test made, with its key.
type issued struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func (c *issued) pem() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw})
}

func newTestKey(t testing.TB, kind string) crypto.Signer {
	t.Helper()
	var key crypto.Signer
	var err error
	if kind == "rsa" {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// issue signs tmpl for key with parent's key, or with key itself when
// parent is nil.
func issue(t testing.TB, tmpl *x509.Certificate, key crypto.Signer, parent *issued) *issued {
	t.Helper()
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	signer, parentCert := key, tmpl
	if parent != nil {
		signer, parentCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &issued{cert: c, key: key}
}

// chainSpec is a root, an intermediate and a leaf as templates, which a
// test changes before build signs them.
type chainSpec struct {
	key                        string // rsa or ec, for all three
	root, inter, leaf          *x509.Certificate
	rootKey, interKey, leafKey crypto.Signer
}

func caTemplate(cn string, life time.Duration) *x509.Certificate {
	return &x509.Certificate{
		Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour).Truncate(time.Second),
		NotAfter: time.Now().Add(life).Truncate(time.Second), KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true,
	}
}

// newChainSpec is a sound chain: a ten-year root, a five-year intermediate
// and a 90-day leaf for localhost and 127.0.0.1, fit for TLS servers.
func newChainSpec(t testing.TB, key string) *chainSpec {
	t.Helper()
	ku := x509.KeyUsageDigitalSignature
	if key == "rsa" {
		ku |= x509.KeyUsageKeyEncipherment
	}
	return &chainSpec{
		key: key, rootKey: newTestKey(t, key), interKey: newTestKey(t, key), leafKey: newTestKey(t, key),
		root:  caTemplate("gpuhost test root", 10*365*24*time.Hour),
		inter: caTemplate("gpuhost test intermediate", 5*365*24*time.Hour),
		leaf: &x509.Certificate{
			Subject: pkix.Name{CommonName: "gpuhost test leaf"}, NotBefore: time.Now().Add(-time.Hour).Truncate(time.Second),
			NotAfter: time.Now().Add(90 * 24 * time.Hour).Truncate(time.Second), KeyUsage: ku,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		},
	}
}

// build signs the three: root, intermediate, leaf.
func (s *chainSpec) build(t testing.TB) (root, inter, leaf *issued) {
	t.Helper()
	root = issue(t, s.root, s.rootKey, nil)
	inter = issue(t, s.inter, s.interKey, root)
	leaf = issue(t, s.leaf, s.leafKey, inter)
	return root, inter, leaf
}

// storeDir is a target root whose CA bundle holds pems, among a block that
// is no certificate and one that does not parse, as real bundles may have.
func storeDir(t testing.TB, path string, pems ...[]byte) string {
	t.Helper()
	dir := t.TempDir()
	bundle := []byte("# a comment, as some bundles carry\n")
	bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: []byte{1}})...)
	bundle = append(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{0x30, 0}})...)
	for _, p := range pems {
		bundle = append(bundle, p...)
	}
	full := filepath.Join(dir, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func storeOf(t testing.TB, dir string) *trustStore {
	t.Helper()
	return loadTrustStore(collecttest.NewEnv(t, dir, true).FS)
}

func certs(cs ...*issued) []*x509.Certificate {
	var out []*x509.Certificate
	for _, c := range cs {
		out = append(out, c.cert)
	}
	return out
}

func links(t *testing.T, ts *trustStore, chain []*x509.Certificate) []string {
	t.Helper()
	got, _ := ts.judge(chain, time.Now())
	var out []string
	for _, c := range got {
		out = append(out, c.Link)
	}
	return out
}

func TestTrustStore(t *testing.T) {
	root, _, _ := newChainSpec(t, "ec").build(t)
	ts := storeOf(t, storeDir(t, "etc/pki/tls/certs/ca-bundle.crt", root.pem()))
	if ts.err != "" || ts.display != "/etc/pki/tls/certs/ca-bundle.crt" || len(ts.bySubject) != 1 {
		t.Errorf("store %+v, want Fedora's bundle with the one root that parses", ts)
	}
	// Debian's path comes first, as it does for Go.
	dir := storeDir(t, "etc/pki/tls/certs/ca-bundle.crt", root.pem())
	if err := os.MkdirAll(filepath.Join(dir, "etc/ssl/certs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/pki/tls/certs/ca-bundle.crt", filepath.Join(dir, "etc/ssl/certs/ca-certificates.crt")); err != nil {
		t.Fatal(err)
	}
	if ts := storeOf(t, dir); ts.display != "/etc/ssl/certs/ca-certificates.crt" || ts.roots == nil {
		t.Errorf("store %+v, want Debian's path, a link inside the target", ts)
	}
	if ts := storeOf(t, t.TempDir()); ts.roots != nil || !strings.HasPrefix(ts.err, "the target has no CA bundle at /etc/ssl/certs/ca-certificates.crt, ") {
		t.Errorf("no bundle: %+v", ts)
	}
	if ts := storeOf(t, storeDir(t, "etc/ssl/cert.pem")); ts.roots != nil || ts.err != "the CA bundle /etc/ssl/cert.pem holds no certificate" {
		t.Errorf("a bundle of no certificate: %+v", ts)
	}
	big := storeDir(t, "etc/ssl/certs/ca-certificates.crt", bytes.Repeat([]byte("#"), maxTrustBundle+1))
	if ts := storeOf(t, big); ts.roots != nil || !strings.Contains(ts.err, "reading the CA bundle /etc/ssl/certs/ca-certificates.crt: ") ||
		!strings.Contains(ts.err, "limit") {
		t.Errorf("a bundle over the bound: %+v", ts)
	}
	var none *trustStore
	if _, v := none.judge(certs(root), time.Now()); v.StoreError == "" || v.Verified {
		t.Errorf("no store read: %+v", v)
	}
}

func TestChainLinks(t *testing.T) {
	root, inter, leaf := newChainSpec(t, "ec").build(t)
	ts := storeOf(t, storeDir(t, "etc/ssl/certs/ca-certificates.crt", root.pem()))
	// A store that holds the intermediate, not its root, as an anchor.
	anchored := storeOf(t, storeDir(t, "etc/ssl/certs/ca-certificates.crt", inter.pem()))
	for name, tc := range map[string]struct {
		chain    []*x509.Certificate
		store    *trustStore
		links    []string
		verified bool
	}{
		"whole":              {certs(leaf, inter, root), ts, []string{"issued_by_next", "issued_by_next", "self_signed"}, true},
		"the root left out":  {certs(leaf, inter), ts, []string{"issued_by_next", "store"}, true},
		"out of order":       {certs(leaf, root, inter), ts, []string{"wrong_issuer", "self_signed", "store"}, true},
		"intermediate left":  {certs(leaf), ts, []string{"missing"}, false},
		"no store":           {certs(leaf, inter), nil, []string{"issued_by_next", "unknown"}, false},
		"the root alone":     {certs(root), ts, []string{"self_signed"}, true},
		"an unrelated chain": {certs(inter, leaf), ts, []string{"wrong_issuer", "missing"}, true},
		"an anchor sent":     {certs(leaf, inter), anchored, []string{"issued_by_next", "store"}, true},
	} {
		got := links(t, tc.store, tc.chain)
		if !slices.Equal(got, tc.links) {
			t.Errorf("%s: links %v, want %v", name, got, tc.links)
		}
		if _, v := tc.store.judge(tc.chain, time.Now()); v.Verified != tc.verified {
			t.Errorf("%s: %+v, want verified %v", name, v, tc.verified)
		}
	}

	// An intermediate named as the issuer whose key did not sign.
	spec := newChainSpec(t, "ec")
	_, impostor, _ := spec.build(t)
	got, v := ts.judge(certs(leaf, impostor), time.Now())
	if got[0].Link != "bad_signature" || !strings.Contains(got[0].LinkError, "verification failure") || v.Verified {
		t.Errorf("a forged issuer: %+v %+v", got[0], v)
	}
}

// A SHA-1 signature, which x509 does not check, still ties the chain: the
// checks fail it by its algorithm, and the chain is seen whole.
func TestChainLinksThroughSHA1(t *testing.T) {
	spec := newChainSpec(t, "rsa")
	spec.inter.SignatureAlgorithm = x509.SHA1WithRSA
	spec.leaf.SignatureAlgorithm = x509.SHA1WithRSA
	root, inter, leaf := spec.build(t)
	ts := storeOf(t, storeDir(t, "etc/ssl/certs/ca-certificates.crt", root.pem()))
	got, v := ts.judge(certs(leaf, inter), time.Now())
	if got[0].Link != "issued_by_next" || got[1].Link != "store" || got[0].SignatureAlgorithm != "SHA1-RSA" {
		t.Errorf("links %+v", got)
	}
	if v.Verified || !strings.Contains(v.Error, "insecure algorithm SHA1-RSA") {
		t.Errorf("verification %+v, want x509's refusal of SHA-1", v)
	}
}

func TestChainCertFacts(t *testing.T) {
	spec := newChainSpec(t, "rsa")
	spec.leaf.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageAny}
	spec.leaf.UnknownExtKeyUsage = []asn1.ObjectIdentifier{{1, 2, 3, 4}}
	spec.leaf.NotBefore = time.Now().Add(72 * time.Hour).Truncate(time.Second)
	root, inter, leaf := spec.build(t)
	now := time.Now()
	got, _ := storeOf(t, t.TempDir()).judge(certs(leaf, inter, root), now)
	l := got[0]
	if l.Depth != 0 || l.Subject != "CN=gpuhost test leaf" || l.Issuer != "CN=gpuhost test intermediate" || l.KeyType != "RSA" || l.KeyBits != 2048 ||
		l.IsCA || l.SelfSigned || !l.NotYetValid || l.AgeSeconds > -71*3600 || len(l.SHA256) != 64 ||
		!slices.Equal(l.KeyUsage, []string{"digitalSignature", "keyEncipherment"}) ||
		!slices.Equal(l.ExtKeyUsage, []string{"clientAuth", "any", "1.2.3.4"}) {
		t.Errorf("leaf %+v", l)
	}
	if r := got[2]; r.Depth != 2 || !r.SelfSigned || !r.IsCA || r.NotYetValid || !slices.Equal(r.KeyUsage, []string{"keyCertSign", "cRLSign"}) ||
		len(r.ExtKeyUsage) != 0 || r.Link != "self_signed" || r.SecondsLeft < 9*365*24*3600 {
		t.Errorf("root %+v", r)
	}
}

func TestParseCertificatesBounds(t *testing.T) {
	leaf := testLeaf(t)
	for _, tls13 := range []bool{false, true} {
		chain := slices.Repeat([][]byte{leaf}, maxChainCertificates)
		got, err := parseCertificates(certificateMessage(chain, tls13), tls13)
		if err != nil || len(got) != maxChainCertificates {
			t.Errorf("tls13 %v: %d certificates, %v; want all %d", tls13, len(got), err, maxChainCertificates)
		}
		_, err = parseCertificates(certificateMessage(append(chain, leaf), tls13), tls13)
		if !errors.Is(err, errChainBound) || !strings.Contains(err.Error(), "more than 10 certificates") {
			t.Errorf("tls13 %v: 11 certificates: %v", tls13, err)
		}
		big := bytes.Repeat([]byte{0x30}, maxChainBytes/2+1)
		_, err = parseCertificates(certificateMessage([][]byte{big, big}, tls13), tls13)
		if !errors.Is(err, errChainBound) || !strings.Contains(err.Error(), "more than 65536 bytes") {
			t.Errorf("tls13 %v: over the byte bound: %v", tls13, err)
		}
		if _, err := parseCertificates(certificateMessage([][]byte{leaf, {}}, tls13), tls13); err == nil ||
			err.Error() != "a malformed certificate at depth 1 of the chain" {
			t.Errorf("tls13 %v: an empty certificate: %v", tls13, err)
		}
	}
	// Go's client hands over what it read; parseChain holds it to the
	// same bounds and refuses a chain with one certificate that does not
	// parse.
	if _, err := parseChain(slices.Repeat([][]byte{leaf}, 11)); !errors.Is(err, errChainBound) {
		t.Errorf("11 certificates: %v", err)
	}
	if _, err := parseChain([][]byte{leaf, {0x30, 0}}); err == nil || !strings.HasPrefix(err.Error(), "certificate 1 of the chain does not parse: ") {
		t.Errorf("an intermediate that does not parse: %v", err)
	}
	if _, err := parseChain(nil); err == nil {
		t.Error("an empty chain, accepted")
	}
}

// The whole chain comes from the clear TLS 1.2 flight, and a chain over the
// bound is an error of the listener, with no certificate kept.
func TestClearFlightChain(t *testing.T) {
	root, inter, leaf := newChainSpec(t, "ec").build(t)
	f := &fakeServer{t: t, cert: leaf.cert.Raw, chain: [][]byte{inter.cert.Raw, root.cert.Raw}, suites: map[uint16][]uint16{versionTLS12: {0xc02b}}}
	p := probePort(t, f.start())
	if len(p.Chain) != 3 || p.Chain[0].Subject != "CN=gpuhost test leaf" || p.Chain[1].Link != "issued_by_next" || p.Chain[2].Link != "self_signed" ||
		p.Certificate == nil || p.Certificate.Subject != p.Chain[0].Subject {
		t.Errorf("chain %+v certificate %+v, want leaf, intermediate and root", p.Chain, p.Certificate)
	}
	if v := p.Verification; v == nil || v.Verified || v.StoreError != "no trust store was read" {
		t.Errorf("verification %+v, want none without a store", v)
	}

	long := &fakeServer{t: t, cert: leaf.cert.Raw, chain: slices.Repeat([][]byte{inter.cert.Raw}, maxChainCertificates), suites: map[uint16][]uint16{versionTLS12: {0xc02b}}}
	p = probePort(t, long.start())
	want := "tls1.2: the certificate could not be read: the server sent more than 10 certificates: over the probe's bound on certificate chains"
	if !strings.Contains(p.Error, want) || p.Certificate != nil || p.Chain != nil {
		t.Errorf("error %q, certificate %+v, want %q and nothing kept", p.Error, p.Certificate, want)
	}
}

// BenchmarkLoadTrustStore reads and parses this machine's own CA bundle,
// which every live scan does once.
func BenchmarkLoadTrustStore(b *testing.B) {
	env := collecttest.NewEnv(b, "/", true)
	if ts := loadTrustStore(env.FS); ts.roots == nil {
		b.Skipf("this machine has no CA bundle to read: %s", ts.err)
	}
	for b.Loop() {
		loadTrustStore(env.FS)
	}
	b.ReportMetric(float64(len(loadTrustStore(env.FS).bySubject)), "CAs")
}
