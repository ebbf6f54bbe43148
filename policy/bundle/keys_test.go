package bundle

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/policies"
)

// keyPair is a private key as a signer holds it and its public key (PKIX)
// as a scanner does.
type keyPair struct {
	name      string
	priv, pub string
	alg       string // what the key signs with when none is named
	other     string // an algorithm the key does not go with
}

func pemOf(t *testing.T, typ string, der []byte, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

func pkix(t *testing.T, k crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k)
	return pemOf(t, "PUBLIC KEY", der, err)
}

// keyPairs makes a key of every type OPA signs with, each in the encoding
// openssl writes it in by default.
func keyPairs(t *testing.T) []keyPair {
	t.Helper()
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8 := func(k any) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		return pemOf(t, "PRIVATE KEY", der, err)
	}
	pairs := []keyPair{
		{"RSA PKCS#1", pemOf(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(r), nil), pkix(t, &r.PublicKey), "RS256", "ES256"},
		{"RSA PKCS#8", pkcs8(r), pkix(t, &r.PublicKey), "RS256", "EdDSA"},
	}
	for _, c := range []struct {
		curve elliptic.Curve
		alg   string
	}{{elliptic.P256(), "ES256"}, {elliptic.P384(), "ES384"}, {elliptic.P521(), "ES512"}} {
		k, err := ecdsa.GenerateKey(c.curve, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalECPrivateKey(k)
		sec1 := pemOf(t, "EC PRIVATE KEY", der, err)
		pairs = append(pairs,
			keyPair{"ECDSA " + c.curve.Params().Name + " PKCS#8", pkcs8(k), pkix(t, &k.PublicKey), c.alg, "RS256"},
			// openssl ecparam -genkey writes the curve's parameters first.
			keyPair{"ECDSA " + c.curve.Params().Name + " SEC 1 after EC PARAMETERS", "-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n" + sec1, pkix(t, &k.PublicKey), c.alg, "ES999"})
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return append(pairs, keyPair{"Ed25519", pkcs8(priv), pkix(t, pub), "EdDSA", "ES256"})
}

// TestBundleSignedWithEveryKeyType: with no algorithm named, every key type
// signs with its own, and OPA's reader verifies the bundle with the public
// key and that algorithm, as does the engine with the algorithm left to
// the key.
func TestBundleSignedWithEveryKeyType(t *testing.T) {
	for _, kp := range keyPairs(t) {
		t.Run(kp.name, func(t *testing.T) {
			data, err := Build(policies.FS, "embedded", Options{SigningKey: kp.priv})
			if err != nil {
				t.Fatal(err)
			}
			vc := bundle.NewVerificationConfig(map[string]*bundle.KeyConfig{KeyID: {Key: kp.pub, Algorithm: kp.alg}}, KeyID, "", nil)
			if _, err := bundle.NewReader(bytes.NewReader(data)).WithBundleVerificationConfig(vc).WithRegoVersion(ast.RegoV1).Read(); err != nil {
				t.Fatalf("OPA refuses the bundle with %s: %v", kp.alg, err)
			}
			_, alg, err := VerificationKey(kp.pub, "")
			if err != nil || alg != kp.alg {
				t.Fatalf("VerificationKey(public key) = %q, %v; want %s", alg, err, kp.alg)
			}
			if _, err := engine.LoadPath(writeBundle(t, data), &engine.BundleKey{PEM: kp.pub, Algorithm: alg}); err != nil {
				t.Fatalf("engine refuses the bundle: %v", err)
			}
			if _, err := Build(policies.FS, "embedded", Options{SigningKey: kp.priv, Algorithm: kp.alg}); err != nil {
				t.Errorf("with %s named: %v", kp.alg, err)
			}
			_, err = Build(policies.FS, "embedded", Options{SigningKey: kp.priv, Algorithm: kp.other})
			var ae *AlgorithmError
			if !errors.As(err, &ae) || !strings.Contains(err.Error(), kp.alg) || !strings.Contains(err.Error(), kp.other) {
				t.Errorf("with %s named: %v; want an AlgorithmError naming %s and %s", kp.other, err, kp.other, kp.alg)
			}
		})
	}
}

// TestParseKeyRefuses: what is no usable key is named for what it is,
// before OPA sees it.
func TestParseKeyRefuses(t *testing.T) {
	pairs := keyPairs(t)
	rsaPriv, rsaPub := pairs[0].priv, pairs[0].pub
	k, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p224, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, key, alg, want string
	}{
		{"empty", "\n", "HS256", "the file is empty"},
		{"truncated", rsaPriv[:len(rsaPriv)/2], "", "does not decode"},
		{"damaged", strings.Replace(rsaPriv, "\n", "\n!", 3), "", "does not decode"},
		{"certificate request", "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n", "", `"CERTIFICATE REQUEST" block, which is no key`},
		{"encrypted", "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n", "", "encrypted"},
		{"P-224", pemOf(t, "PUBLIC KEY", p224, nil), "", "ECDSA P-224 key, which OPA does not sign with"},
		{"public key signs", rsaPub, "", "a public RSA key only verifies"},
		{"garbage without an algorithm", "not a key", "", "HMAC secret, whose algorithm must be named: HS256, HS384, HS512"},
		{"PEM key as an HMAC secret", rsaPriv, "HS256", "an RSA key goes with RS256, RS384, RS512, PS256, PS384, PS512, not HS256"},
		{"unknown algorithm", rsaPriv, "RS1", "not RS1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := SigningKey(c.key, c.alg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("SigningKey: %v; want an error saying %q", err, c.want)
			}
		})
	}
	if key, alg, err := SigningKey("s3cret", "HS384"); err != nil || key != "s3cret" || alg != "HS384" {
		t.Errorf("an HMAC secret with HS384: %q, %q, %v", key, alg, err)
	}
}
