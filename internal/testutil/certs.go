package testutil

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"
)

// CertSpec says what kind of certificate a test peer presents.
type CertSpec struct {
	// Key is rsa1024, rsa2048 or p256 (the default).
	Key string
	// SHA1 signs with SHA-1 (RSA keys only).
	SHA1 bool
	// NotAfter is when it expires; a year from now when zero.
	NotAfter time.Time
	// NotBefore is when it became valid. When zero: an hour ago for a
	// certificate still valid, as a freshly issued one is (so that key
	// rotation checks see a new key), and two years before NotAfter for
	// one already expired.
	NotBefore time.Time
	// DNS and IPs are its subject alternative names; none when both are
	// empty.
	DNS []string
	IPs []net.IP
	// CA signs it; it is self-signed when nil.
	CA *CA
	// CommonName and Organization are its subject ("gpuhost test peer"
	// when CommonName is empty): a Kubernetes API server takes them as the
	// user name and groups of a client certificate.
	CommonName   string
	Organization []string
	// Client makes it a client certificate rather than a server's.
	Client bool
	// MustStaple adds the TLS Feature extension with status_request
	// (RFC 7633), which bids clients refuse it without a stapled OCSP
	// response.
	MustStaple bool
}

// mustStapleOID is the TLS Feature extension's (id-pe-tlsfeature).
var mustStapleOID = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 1, 24}

// CA is a test certificate authority.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// NewCA makes a fresh CA for one test.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key := newKey(t, "p256")
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "gpuhost test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{cert: cert, key: key}
}

func newKey(t testing.TB, kind string) crypto.Signer {
	t.Helper()
	var key crypto.Signer
	var err error
	switch kind {
	case "rsa1024":
		key, err = rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // a weak key is what such a test is about
	case "rsa2048":
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// WriteCert writes a certificate and its key as PEM into dir and returns
// both paths and the parsed pair.
func WriteCert(t testing.TB, dir string, s CertSpec) (certPath, keyPath string, pair tls.Certificate) {
	t.Helper()
	key := newKey(t, s.Key)
	if s.NotAfter.IsZero() {
		s.NotAfter = time.Now().Add(365 * 24 * time.Hour)
	}
	if s.NotBefore.IsZero() {
		s.NotBefore = time.Now().Add(-time.Hour)
		if !s.NotAfter.After(s.NotBefore) {
			s.NotBefore = s.NotAfter.Add(-2 * 365 * 24 * time.Hour)
		}
	}
	if s.CommonName == "" {
		s.CommonName = "gpuhost test peer"
	}
	usage := x509.ExtKeyUsageServerAuth
	if s.Client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: s.CommonName, Organization: s.Organization},
		NotBefore:    s.NotBefore,
		NotAfter:     s.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     s.DNS,
		IPAddresses:  s.IPs,
	}
	if s.SHA1 {
		tmpl.SignatureAlgorithm = x509.SHA1WithRSA
	}
	if s.MustStaple {
		// SEQUENCE { INTEGER 5 }: status_request.
		tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, pkix.Extension{Id: mustStapleOID, Value: []byte{0x30, 0x03, 0x02, 0x01, 0x05}})
	}
	parent, signer := tmpl, key
	if s.CA != nil {
		parent, signer = s.CA.cert, s.CA.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for path, data := range map[string][]byte{certPath: certPEM, keyPath: keyPEM} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath, pair
}

// Pool returns a certificate pool holding only the CA, for a client that
// must trust what it signed and nothing else.
func (c *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.cert)
	return p
}

// PEM is the CA's certificate in PEM, for a peer that reads its trust from
// a file.
func (c *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw})
}

// OCSPResponse writes, to path, a DER OCSP response in which the CA says
// leaf (DER) is good for a day, as a server staples it.
func (c *CA) OCSPResponse(t testing.TB, leaf []byte, path string) {
	t.Helper()
	cert, err := x509.ParseCertificate(leaf)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	der, err := ocsp.CreateResponse(c.cert, c.cert, ocsp.Response{
		Status: ocsp.Good, SerialNumber: cert.SerialNumber, ThisUpdate: now.Add(-time.Hour), NextUpdate: now.Add(24 * time.Hour),
	}, c.key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, der, 0o600); err != nil {
		t.Fatal(err)
	}
}
