package tls

import (
	"bytes"
	"crypto/dsa" //nolint:staticcheck // DSA keys are read to be reported, never used
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"time"

	"github.com/gpuhost/gpuhost/facts"
)

// certificateFacts describes a listener's leaf certificate for policy, as
// of now: the seconds left before it expires are counted here, by the clock
// the probe ran at, so that the checks read no clock of their own.
func certificateFacts(c *x509.Certificate, now time.Time) *facts.TLSCertificate {
	kind, bits := publicKeyFacts(c)
	return &facts.TLSCertificate{
		Subject:            c.Subject.String(),
		Issuer:             c.Issuer.String(),
		NotBefore:          c.NotBefore.UTC().Format(time.RFC3339),
		NotAfter:           c.NotAfter.UTC().Format(time.RFC3339),
		AgeSeconds:         int64(now.Sub(c.NotBefore) / time.Second),
		SecondsLeft:        int64(c.NotAfter.Sub(now) / time.Second),
		KeyType:            kind,
		KeyBits:            bits,
		SignatureAlgorithm: c.SignatureAlgorithm.String(),
		SANs:               subjectAltNames(c),
		SelfSigned:         selfSigned(c),
	}
}

// publicKeyFacts names a certificate's key and its size: RSA, EC,
// Ed25519, DSA (its prime's bits), RSA-PSS (a key Go's parser leaves
// unread: its modulus is read from the key info), or the algorithm's
// object identifier, with no size, for a key nothing here knows.
func publicKeyFacts(c *x509.Certificate) (string, int) {
	switch k := c.PublicKey.(type) {
	case *rsa.PublicKey:
		return "RSA", k.N.BitLen()
	case *ecdsa.PublicKey:
		return "EC", k.Curve.Params().BitSize
	case ed25519.PublicKey:
		return "Ed25519", 256
	case *dsa.PublicKey:
		return "DSA", k.P.BitLen()
	}
	var spki struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if rest, err := asn1.Unmarshal(c.RawSubjectPublicKeyInfo, &spki); err != nil || len(rest) > 0 {
		return "unparsed", 0
	}
	if spki.Algorithm.Algorithm.Equal(oidEd448) {
		return "Ed448", 448
	}
	if spki.Algorithm.Algorithm.Equal(oidRSAPSS) {
		if k, err := x509.ParsePKCS1PublicKey(spki.PublicKey.RightAlign()); err == nil {
			return "RSA-PSS", k.N.BitLen()
		}
		return "RSA-PSS", 0
	}
	return spki.Algorithm.Algorithm.String(), 0
}

// oidRSAPSS is id-RSASSA-PSS (RFC 4055): an RSA key bound to PSS; oidEd448
// is id-Ed448 (RFC 8410).
var (
	oidRSAPSS = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 10}
	oidEd448  = asn1.ObjectIdentifier{1, 3, 101, 113}
)

func subjectAltNames(c *x509.Certificate) []string {
	sans := append([]string{}, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		sans = append(sans, ip.String())
	}
	sans = append(sans, c.EmailAddresses...)
	for _, u := range c.URIs {
		sans = append(sans, u.String())
	}
	return sans
}

// selfSigned reports whether c names itself as issuer and its own key
// signed it. A signature Go will not check (MD5) still counts when the
// names match: such a certificate vouches for nothing either way.
func selfSigned(c *x509.Certificate) bool {
	if !bytes.Equal(c.RawIssuer, c.RawSubject) {
		return false
	}
	err := c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature)
	var insecure x509.InsecureAlgorithmError
	return err == nil || errors.As(err, &insecure)
}
