package tls

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpuhost/gpuhost/facts"
)

// parseChain parses the certificates a server sent, leaf first, within the
// probe's bound on chains: the TLS 1.2-or-older flight and the probe's
// ffdhe handshake were held to it as they were read, Go's client is held
// here. A chain with one certificate that does not parse is refused whole,
// as a client refuses it.
func parseChain(ders [][]byte) ([]*x509.Certificate, error) {
	if len(ders) == 0 {
		return nil, errors.New("the server sent an empty certificate chain")
	}
	if len(ders) > maxChainCertificates {
		return nil, fmt.Errorf("the server sent %d certificates, more than %d: %w", len(ders), maxChainCertificates, errChainBound)
	}
	size := 0
	for _, d := range ders {
		size += len(d)
	}
	if size > maxChainBytes {
		return nil, fmt.Errorf("the server's certificates come to %d bytes, more than %d: %w", size, maxChainBytes, errChainBound)
	}
	chain := make([]*x509.Certificate, 0, len(ders))
	for i, d := range ders {
		c, err := x509.ParseCertificate(d)
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("the certificate does not parse: %w", err)
			}
			return nil, fmt.Errorf("certificate %d of the chain does not parse: %w", i, err)
		}
		chain = append(chain, c)
	}
	return chain, nil
}

// judge describes every certificate of a chain, leaf first, and how each
// ties to its issuer, and verifies the chain against the store, all as of
// now, the probe's clock. A nil store is one never read (a prober made
// without a target), which verifies nothing.
func (ts *trustStore) judge(chain []*x509.Certificate, now time.Time) ([]facts.TLSChainCert, *facts.TLSVerification) {
	out := make([]facts.TLSChainCert, len(chain))
	for i, c := range chain {
		out[i] = chainCertFacts(c, i, now)
		out[i].Link, out[i].LinkError = ts.link(chain, i)
	}
	return out, ts.verify(chain, now)
}

// link says how chain[i] ties to its issuer (TLSChainCert.Link).
func (ts *trustStore) link(chain []*x509.Certificate, i int) (string, string) {
	c := chain[i]
	switch {
	case selfSigned(c):
		return "self_signed", ""
	case i+1 < len(chain):
		next := chain[i+1]
		if !bytes.Equal(c.RawIssuer, next.RawSubject) {
			return "wrong_issuer", ""
		}
		if err := checkSignatureFrom(c, next); err != nil {
			return "bad_signature", err.Error()
		}
		return "issued_by_next", ""
	case ts == nil || ts.roots == nil:
		return "unknown", ""
	}
	for _, ca := range ts.bySubject[string(c.RawIssuer)] {
		if checkSignatureFrom(c, ca) == nil {
			return "store", ""
		}
	}
	// A certificate the store holds itself is an anchor, whoever issued
	// it, and so is one of the same name and key as a root it holds: a
	// root cross-signed by an older one, which a server sends for clients
	// that lack the new root, while the rest anchor at their own copy.
	for _, ca := range ts.bySubject[string(c.RawSubject)] {
		if bytes.Equal(ca.Raw, c.Raw) || bytes.Equal(ca.RawSubjectPublicKeyInfo, c.RawSubjectPublicKeyInfo) {
			return "store", ""
		}
	}
	return "missing", ""
}

// checkSignatureFrom is x509's check that parent signed c (a CA, allowed
// to sign certificates), except that a SHA-1 signature, which x509 will
// not check at all, is checked too: the checks fail it by its algorithm,
// and the chain is still seen whole.
func checkSignatureFrom(c, parent *x509.Certificate) error {
	err := c.CheckSignatureFrom(parent)
	var insecure x509.InsecureAlgorithmError
	if errors.As(err, &insecure) {
		return parent.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature)
	}
	return err
}

// verify runs crypto/x509's path building and checks as a TLS client does:
// the certificates after the leaf as intermediates in any order, the
// store's CAs as roots, the probe's clock, TLS server authentication as the
// purpose. DNSName is left empty, so no host name is checked: the probe
// dials an address and knows no name a client would ask for.
func (ts *trustStore) verify(chain []*x509.Certificate, now time.Time) *facts.TLSVerification {
	if ts == nil {
		return &facts.TLSVerification{StoreError: "no trust store was read"}
	}
	v := &facts.TLSVerification{Store: ts.display, StoreError: ts.err}
	if ts.roots == nil {
		return v
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{
		Roots:         ts.roots,
		Intermediates: inter,
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	v.Verified = err == nil
	if err != nil {
		v.Error = err.Error()
	}
	return v
}

// chainCertFacts describes one certificate of a chain as of now.
func chainCertFacts(c *x509.Certificate, depth int, now time.Time) facts.TLSChainCert {
	kind, bits := publicKeyFacts(c)
	sum := sha256.Sum256(c.Raw)
	return facts.TLSChainCert{
		Depth:              depth,
		Subject:            c.Subject.String(),
		Issuer:             c.Issuer.String(),
		SHA256:             hex.EncodeToString(sum[:]),
		NotBefore:          c.NotBefore.UTC().Format(time.RFC3339),
		NotAfter:           c.NotAfter.UTC().Format(time.RFC3339),
		AgeSeconds:         int64(now.Sub(c.NotBefore) / time.Second),
		NotYetValid:        now.Before(c.NotBefore),
		SecondsLeft:        int64(c.NotAfter.Sub(now) / time.Second),
		KeyType:            kind,
		KeyBits:            bits,
		SignatureAlgorithm: c.SignatureAlgorithm.String(),
		SelfSigned:         selfSigned(c),
		IsCA:               c.BasicConstraintsValid && c.IsCA,
		MustStaple:         mustStaple(c),
		KeyUsage:           keyUsageNames(c.KeyUsage),
		ExtKeyUsage:        extKeyUsageNames(c),
	}
}

// keyUsageNames are RFC 5280's names of the keyUsage bits, in bit order.
var keyUsageBits = []string{
	"digitalSignature", "contentCommitment", "keyEncipherment", "dataEncipherment", "keyAgreement",
	"keyCertSign", "cRLSign", "encipherOnly", "decipherOnly",
}

func keyUsageNames(ku x509.KeyUsage) []string {
	out := []string{}
	for i, name := range keyUsageBits {
		if ku&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	return out
}

// extKeyUsageName names Go's extended key usages as RFC 5280 and the
// vendors that registered them do.
var extKeyUsageName = map[x509.ExtKeyUsage]string{
	x509.ExtKeyUsageAny:                            "any",
	x509.ExtKeyUsageServerAuth:                     "serverAuth",
	x509.ExtKeyUsageClientAuth:                     "clientAuth",
	x509.ExtKeyUsageCodeSigning:                    "codeSigning",
	x509.ExtKeyUsageEmailProtection:                "emailProtection",
	x509.ExtKeyUsageIPSECEndSystem:                 "ipsecEndSystem",
	x509.ExtKeyUsageIPSECTunnel:                    "ipsecTunnel",
	x509.ExtKeyUsageIPSECUser:                      "ipsecUser",
	x509.ExtKeyUsageTimeStamping:                   "timeStamping",
	x509.ExtKeyUsageOCSPSigning:                    "OCSPSigning",
	x509.ExtKeyUsageMicrosoftServerGatedCrypto:     "msSGC",
	x509.ExtKeyUsageNetscapeServerGatedCrypto:      "nsSGC",
	x509.ExtKeyUsageMicrosoftCommercialCodeSigning: "msCodeCom",
	x509.ExtKeyUsageMicrosoftKernelCodeSigning:     "msKernelCodeSigning",
}

// extKeyUsageNames are the certificate's extended key usages, each known
// one by name and any other by its dotted OID.
func extKeyUsageNames(c *x509.Certificate) []string {
	out := []string{}
	for _, u := range c.ExtKeyUsage {
		if name, ok := extKeyUsageName[u]; ok {
			out = append(out, name)
		} else {
			out = append(out, fmt.Sprintf("unknown(%d)", u))
		}
	}
	for _, oid := range c.UnknownExtKeyUsage {
		out = append(out, oid.String())
	}
	return out
}

// tlsFeatureOID is the TLS Feature extension's (RFC 7633, id-pe-tlsfeature).
var tlsFeatureOID = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 1, 24}

// mustStaple says whether c's TLS Feature extension lists status_request
// (5), which is what "must-staple" is.
func mustStaple(c *x509.Certificate) bool {
	for _, e := range c.Extensions {
		if !e.Id.Equal(tlsFeatureOID) {
			continue
		}
		var features []int
		if _, err := asn1.Unmarshal(e.Value, &features); err == nil && slices.Contains(features, 5) {
			return true
		}
	}
	return false
}
