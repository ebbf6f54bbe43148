package tls

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/gpuhost/gpuhost/facts"
	"time"
)

// certificateFacts describes a listener's leaf certificate for policy, as
// of now: the seconds left before it expires are counted here, by the clock
// the probe ran at, so that the checks read no clock of their own.
func certificateFacts(c *x509.Certificate, now time.Time) *facts.TLSCertificate {
	kind, bits := publicKeyFacts(c.PublicKey)
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

func publicKeyFacts(k any) (string, int) {
	switch k := k.(type) {
	case *rsa.PublicKey:
		return "RSA", k.N.BitLen()
	case *ecdsa.PublicKey:
		return "EC", k.Curve.Params().BitSize
	case ed25519.PublicKey:
		return "Ed25519", 256
	}
	return fmt.Sprintf("%T", k), 0
}

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
