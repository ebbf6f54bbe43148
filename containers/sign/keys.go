package sign

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"errors"
	"fmt"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/kms"
)

// Signer signs the payloads the gate publishes. It is sigstore's
// signature.Signer, so an in-memory key, a KMS key and anything else
// sigstore can sign with fit the same slot.
type Signer = signature.Signer

// Verifier checks signatures made by a Signer.
type Verifier = signature.Verifier

// KMS opens a signer whose private key stays in a key management service,
// named by a URI such as awskms:///alias/gpuhost or hashivault://gpuhost.
// It is the hook for keys gpuhost never holds: the default, OpenKMS, is
// sigstore's kms.Get, which finds a provider registered by a blank import
// (sigstore's awskms, gcpkms, azurekms and hashivault packages, each a
// module of its own that this build does not link, so as not to carry four
// cloud SDKs) and otherwise runs the sigstore KMS plugin named after the
// URI's scheme (sigstore-kms-<scheme> on PATH), the same plugins cosign
// uses.
type KMS func(ctx context.Context, uri string) (signature.SignerVerifier, error)

// OpenKMS is the default KMS: sigstore's providers and plugins, signing
// SHA-256 digests as cosign does.
func OpenKMS(ctx context.Context, uri string) (signature.SignerVerifier, error) {
	sv, err := kms.Get(ctx, uri, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("opening KMS key %s: %w", uri, err)
	}
	return sv, nil
}

// LoadPrivateKey reads a PEM private key: PKCS#8 or SEC 1, or the
// encrypted format `cosign generate-key-pair` writes (ENCRYPTED SIGSTORE
// PRIVATE KEY or ENCRYPTED COSIGN PRIVATE KEY), which password opens. Only
// ECDSA P-256 is taken: it is what cosign generates and what every
// verifier of its format accepts with SHA-256. Errors never quote the key.
func LoadPrivateKey(pemBytes, password []byte) (signature.SignerVerifier, error) {
	pass := func(bool) ([]byte, error) {
		if len(password) == 0 {
			return nil, errors.New("the key is encrypted and no password was given")
		}
		return password, nil
	}
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(pemBytes, pass)
	if err != nil {
		return nil, fmt.Errorf("reading the signing key: %w", err)
	}
	ec, ok := priv.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("reading the signing key: a %T, want an ECDSA P-256 key", priv)
	}
	return signature.LoadECDSASignerVerifier(ec, crypto.SHA256)
}

// LoadPublicKey reads a PEM public key (PKIX, as cosign.pub) to verify
// with. ECDSA P-256 only, as LoadPrivateKey.
func LoadPublicKey(pemBytes []byte) (Verifier, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("reading the public key: %w", err)
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("reading the public key: a %T, want an ECDSA P-256 key", pub)
	}
	return signature.LoadECDSAVerifier(ec, crypto.SHA256)
}

// PublicKeyPEM is the PEM of a signer's public key, as cosign.pub holds it.
func PublicKeyPEM(s signature.PublicKeyProvider) ([]byte, error) {
	pub, err := s.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("reading the signer's public key: %w", err)
	}
	return cryptoutils.MarshalPublicKeyToPEM(pub)
}
