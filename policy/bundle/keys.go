package bundle

import (
	"crypto/dsa"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SupportedKeys says, for errors, which keys a bundle or a waiver file can
// be signed and verified with: those OPA's bundle signing takes.
const SupportedKeys = "an RSA, ECDSA (P-256, P-384, P-521) or Ed25519 key in PEM, or an HMAC secret with HS256, HS384 or HS512"

// HMACSecret is the Type of a key that is no PEM key: a shared secret.
const HMACSecret = "HMAC secret"

var (
	rsaAlgorithms  = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	hmacAlgorithms = []string{"HS256", "HS384", "HS512"}
)

// Key is a signing or verification key, read for what it is.
type Key struct {
	// PEM is what OPA is given: the key's own PEM block, without whatever
	// the file has around it (openssl ecparam -genkey writes the curve's
	// parameters first, and OPA reads only the first block), or the HMAC
	// secret as it is.
	PEM string
	// Type names the key in messages: "RSA key", "ECDSA P-256 key",
	// "Ed25519 key", "HMAC secret".
	Type string
	// Private is a key that can sign; a public key or a certificate only
	// verifies. An HMAC secret does both.
	Private bool
	// Algorithms are the JWT algorithms the key goes with; the first is
	// the one a signature takes when no algorithm is named.
	Algorithms []string
}

// AlgorithmError is an algorithm named for a key it does not go with, or
// none named for an HMAC secret, which could be any of three.
type AlgorithmError struct {
	Type      string
	Algorithm string
	Fits      []string
}

func (e *AlgorithmError) Error() string {
	fits := strings.Join(e.Fits, ", ")
	switch {
	case e.Type == HMACSecret && e.Algorithm == "":
		return "no PEM key in it, so it is taken as an HMAC secret, whose algorithm must be named: " + fits
	case e.Type == HMACSecret:
		return fmt.Sprintf("no PEM key in it, so it is taken as an HMAC secret, which goes with %s, not %s", fits, e.Algorithm)
	}
	return fmt.Sprintf("%s %s goes with %s, not %s", article(e.Type), e.Type, fits, e.Algorithm)
}

// ParseKey reads a key: an RSA, ECDSA or Ed25519 private key (PKCS#1,
// SEC 1 or PKCS#8), public key (PKIX or PKCS#1) or certificate in PEM.
// Text with no PEM block in it is an HMAC secret.
func ParseKey(text string) (*Key, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("the file is empty; want " + SupportedKeys)
	}
	rest := []byte(text)
	for {
		block, next := pem.Decode(rest)
		if block == nil {
			break
		}
		rest = next
		if block.Type == "EC PARAMETERS" {
			continue
		}
		k, err := parseBlock(block)
		if err != nil {
			return nil, err
		}
		k.PEM = string(pem.EncodeToMemory(block))
		return k, nil
	}
	if strings.Contains(text, "-----BEGIN ") {
		return nil, errors.New("a PEM block that does not decode (truncated, or its base64 damaged)")
	}
	return &Key{PEM: text, Type: HMACSecret, Private: true, Algorithms: hmacAlgorithms}, nil
}

func parseBlock(block *pem.Block) (*Key, error) {
	if block.Type == "ENCRYPTED PRIVATE KEY" || strings.Contains(block.Headers["Proc-Type"], "ENCRYPTED") {
		return nil, errors.New("the key is encrypted, and OPA signs only with a plain one; decrypt a copy (openssl pkey -in KEY -out PLAIN) and guard it as KEY is guarded")
	}
	var (
		key     any
		err     error
		private bool
	)
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		private = true
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
		private = true
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		private = true
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = cert.PublicKey
		}
	default:
		return nil, fmt.Errorf("a PEM %q block, which is no key; want %s", block.Type, SupportedKeys)
	}
	if err != nil {
		return nil, fmt.Errorf("the PEM %q block does not parse: %w", block.Type, err)
	}
	typ, algs := classify(key)
	if algs == nil {
		return nil, fmt.Errorf("%s %s, which OPA does not sign with; want %s", article(typ), typ, SupportedKeys)
	}
	return &Key{Type: typ, Private: private, Algorithms: algs}, nil
}

// classify names a parsed key and lists the algorithms it goes with; none
// for a key OPA cannot sign or verify with.
func classify(key any) (string, []string) {
	var curve string
	switch k := key.(type) {
	case *rsa.PrivateKey, *rsa.PublicKey:
		return "RSA key", rsaAlgorithms
	case ed25519.PrivateKey, ed25519.PublicKey:
		return "Ed25519 key", []string{"EdDSA"}
	case *ecdsa.PrivateKey:
		curve = k.Curve.Params().Name
	case *ecdsa.PublicKey:
		curve = k.Curve.Params().Name
	case *ecdh.PrivateKey:
		return fmt.Sprint(k.Curve()) + " key", nil
	case *ecdh.PublicKey:
		return fmt.Sprint(k.Curve()) + " key", nil
	case *dsa.PublicKey:
		return "DSA key", nil
	default:
		return fmt.Sprintf("%T key", key), nil
	}
	typ := "ECDSA " + curve + " key"
	switch curve {
	case "P-256":
		return typ, []string{"ES256"}
	case "P-384":
		return typ, []string{"ES384"}
	case "P-521":
		return typ, []string{"ES512"}
	}
	return typ, nil
}

// Algorithm returns alg when the key goes with it, and the key's own
// algorithm when alg is empty. A PEM key never goes with an HS algorithm:
// verifying so would take a public key, which anyone may hold, as the
// shared secret.
func (k *Key) Algorithm(alg string) (string, error) {
	if alg == "" {
		if k.Type == HMACSecret {
			return "", &AlgorithmError{Type: k.Type, Fits: k.Algorithms}
		}
		return k.Algorithms[0], nil
	}
	if !slices.Contains(k.Algorithms, alg) {
		return "", &AlgorithmError{Type: k.Type, Algorithm: alg, Fits: k.Algorithms}
	}
	return alg, nil
}

// article is the article before a key's type, which starts with an
// initialism read letter by letter ("an RSA key", "a DSA key").
func article(s string) string {
	if s != "" && strings.ContainsRune("AEFHILMNORSX", rune(s[0])) {
		return "an"
	}
	return "a"
}

// SigningKey checks that text is a key that can sign with alg (the key's
// own algorithm when alg is empty), and returns what OPA's signing config
// takes: the key's PEM and the algorithm.
func SigningKey(text, alg string) (key, algorithm string, err error) {
	k, err := ParseKey(text)
	if err != nil {
		return "", "", err
	}
	if !k.Private {
		return "", "", fmt.Errorf("a public %s only verifies; signing takes the private key", k.Type)
	}
	if algorithm, err = k.Algorithm(alg); err != nil {
		return "", "", err
	}
	return k.PEM, algorithm, nil
}

// VerificationKey is SigningKey for a key that verifies: a public key, a
// certificate, or the private key itself.
func VerificationKey(text, alg string) (key, algorithm string, err error) {
	k, err := ParseKey(text)
	if err != nil {
		return "", "", err
	}
	if algorithm, err = k.Algorithm(alg); err != nil {
		return "", "", err
	}
	return k.PEM, algorithm, nil
}
