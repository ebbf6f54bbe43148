package secureboot

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/smallstep/pkcs7"
)

// digests are the hashes a signature here may use, by OID, with the name
// facts give them. SHA-1 is listed to be named, not trusted: Go refuses
// SHA-1 signatures.
var digests = []struct {
	oid  asn1.ObjectIdentifier
	hash crypto.Hash
	name string
}{
	{asn1.ObjectIdentifier{1, 3, 14, 3, 2, 26}, crypto.SHA1, "sha1"},
	{asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1}, crypto.SHA256, "sha256"},
	{asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 2}, crypto.SHA384, "sha384"},
	{asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 3}, crypto.SHA512, "sha512"},
	{asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 4}, crypto.SHA224, "sha224"},
}

// digestOf names the hash of oid; ok is false for one not listed, whose
// name is then the OID.
func digestOf(oid asn1.ObjectIdentifier) (crypto.Hash, string, bool) {
	for _, d := range digests {
		if d.oid.Equal(oid) {
			return d.hash, d.name, true
		}
	}
	return 0, oid.String(), false
}

// parsePKCS7 parses der as PKCS#7 SignedData. The library parses what an
// untrusted file says; a crafted signature must give an error, never take
// the process down.
func parsePKCS7(der []byte) (p7 *pkcs7.PKCS7, err error) {
	defer func() {
		if r := recover(); r != nil {
			p7, err = nil, fmt.Errorf("malformed PKCS#7 (%v)", r)
		}
	}()
	p7, err = pkcs7.Parse(der)
	if err != nil {
		return nil, err
	}
	// The library leaves a SignerInfo it cannot read half-filled; one
	// that names its signer by anything but issuer and serial is one.
	if len(p7.Signers) != 1 {
		return nil, fmt.Errorf("%d signers where one was expected", len(p7.Signers))
	}
	if s := p7.Signers[0]; s.IssuerAndSerialNumber.SerialNumber == nil || len(s.IssuerAndSerialNumber.IssuerName.FullBytes) == 0 {
		return nil, errors.New("the signer is not named by issuer and serial number")
	}
	return p7, nil
}

// signerName is the issuer and serial number p7's one signer is named by.
func signerName(p7 *pkcs7.PKCS7) (issuer pkix.Name, serial *big.Int) {
	ias := p7.Signers[0].IssuerAndSerialNumber
	var rdn pkix.RDNSequence
	if _, err := asn1.Unmarshal(ias.IssuerName.FullBytes, &rdn); err == nil {
		issuer.FillFromRDNSequence(&rdn)
	}
	return issuer, ias.SerialNumber
}

// serialText writes a serial number as modinfo shows a key id: its bytes
// in upper-case hex, separated by colons.
func serialText(n *big.Int) string {
	if n == nil {
		return ""
	}
	b := n.Bytes()
	if len(b) == 0 {
		b = []byte{0}
	}
	parts := make([]string, len(b))
	for i, c := range b {
		parts[i] = fmt.Sprintf("%02X", c)
	}
	return strings.Join(parts, ":")
}

// checkAuthenticode checks one PKCS#7 signature of img: what it signs, the
// digest against the file's, and the signer's signature with the
// certificate it carries. The chain is returned for a signature that
// verifies over the file as it is, to be held to the anchors.
func checkAuthenticode(img *peImage, der []byte) (facts.Authenticode, *signerChain) {
	a, p7 := authenticode(img, der)
	if !a.SignatureValid || !a.DigestMatches || p7.GetOnlySigner() == nil {
		return a, nil
	}
	return a, &signerChain{signer: p7.GetOnlySigner(), certs: p7.Certificates}
}

// authenticode is checkAuthenticode's facts, and the parsed signature.
func authenticode(img *peImage, der []byte) (facts.Authenticode, *pkcs7.PKCS7) {
	var a facts.Authenticode
	p7, err := parsePKCS7(der)
	if err != nil {
		a.Error = fmt.Sprintf("parsing the PKCS#7 SignedData: %v", err)
		return a, nil
	}
	if cert := p7.GetOnlySigner(); cert != nil {
		a.Signer, a.Issuer, a.Serial = cert.Subject.String(), cert.Issuer.String(), serialText(cert.SerialNumber)
	} else {
		issuer, serial := signerName(p7)
		a.Issuer, a.Serial = issuer.String(), serialText(serial)
	}
	spc, err := parseSpcIndirectData(p7.Content)
	if err != nil {
		a.Error = err.Error()
		return a, nil
	}
	if !spc.typ.Equal(oidSpcPEImageData) {
		a.Error = fmt.Sprintf("the signature is over %v, not a PE image", spc.typ)
		return a, nil
	}
	h, name, ok := digestOf(spc.alg.Algorithm)
	a.DigestAlgorithm = name
	if !ok {
		a.Error = fmt.Sprintf("digest algorithm %s is not one Authenticode uses", name)
		return a, nil
	}
	sum, err := img.digest(h)
	if err != nil {
		a.Error = err.Error()
		return a, nil
	}
	a.DigestMatches = bytes.Equal(sum, spc.digest)
	if err := p7.Verify(); err != nil {
		a.Error = fmt.Sprintf("the signature does not verify: %v", err)
		return a, nil
	}
	a.SignatureValid = true
	if !a.DigestMatches {
		a.Error = fmt.Sprintf("the file's %s Authenticode digest %x is not the signed %x: it changed after signing", name, sum, spc.digest)
	}
	return a, p7
}

// knownDigest answers the library's message digest with one computed
// while the content streamed past, so that a large module is never held.
type knownDigest map[crypto.Hash][]byte

func (k knownDigest) Hash(h crypto.Hash, _ io.Reader) ([]byte, error) {
	if d, ok := k[h]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("digest %v was not computed", h)
}

// verifyDetached checks p7's one signature over content whose digests sums
// holds, with cert. With signed attributes the library checks the message
// digest attribute and the signature over the attributes; without (as the
// kernel's sign-file writes them) the signature is over the digest itself.
func verifyDetached(p7 *pkcs7.PKCS7, sums knownDigest, cert *x509.Certificate) error {
	s := p7.Signers[0]
	h, name, ok := digestOf(s.DigestAlgorithm.Algorithm)
	if !ok || sums[h] == nil {
		return fmt.Errorf("digest %s is not checked", name)
	}
	if len(s.AuthenticatedAttributes) > 0 {
		p7.Certificates = []*x509.Certificate{cert}
		p7.Hasher = sums
		return p7.Verify()
	}
	switch pub := cert.PublicKey.(type) {
	case *rsa.PublicKey:
		return rsa.VerifyPKCS1v15(pub, h, sums[h], s.EncryptedDigest)
	case *ecdsa.PublicKey:
		if !ecdsa.VerifyASN1(pub, sums[h], s.EncryptedDigest) {
			return errors.New("ECDSA verification failure")
		}
		return nil
	default:
		return fmt.Errorf("a %T key is not checked", cert.PublicKey)
	}
}

// names reports whether cert is the certificate p7's signer names.
func names(p7 *pkcs7.PKCS7, cert *x509.Certificate) bool {
	ias := p7.Signers[0].IssuerAndSerialNumber
	return bytes.Equal(cert.RawIssuer, ias.IssuerName.FullBytes) && cert.SerialNumber.Cmp(ias.SerialNumber) == 0
}
