package waivers

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil/testsign"
)

func rsaKeys(t *testing.T) (priv, pub Key) {
	privPEM, pubPEM := testsign.RSAKeyPEM(t)
	return Key{PEM: privPEM}, Key{PEM: pubPEM}
}

func ecKeys(t *testing.T) (priv, pub Key) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	privDER, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return Key{PEM: string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: privDER})), Algorithm: "ES256"},
		Key{PEM: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})), Algorithm: "ES256"}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	rsaPriv, rsaPub := rsaKeys(t)
	ecPriv, ecPub := ecKeys(t)
	secret := Key{PEM: "a shared secret of some length", Algorithm: "HS256"}
	for name, keys := range map[string][2]Key{
		"RS256": {rsaPriv, rsaPub},
		"ES256": {ecPriv, ecPub},
		"HS256": {secret, secret},
	} {
		t.Run(name, func(t *testing.T) {
			sig, err := Sign([]byte(file), "waivers.yaml", keys[0])
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(sig), `"signatures"`) {
				t.Errorf("not a .signatures.json document: %s", sig)
			}
			if err := Verify([]byte(file), sig, keys[1]); err != nil {
				t.Errorf("own signature refused: %v", err)
			}
			tampered := strings.Replace(file, "2026-12-31", "2036-12-31", 1)
			if err := Verify([]byte(tampered), sig, keys[1]); err == nil || !strings.Contains(err.Error(), "changed after signing") {
				t.Errorf("tampered file: got %v", err)
			}
		})
	}

	sig, err := Sign([]byte(file), "waivers.yaml", rsaPriv)
	if err != nil {
		t.Fatal(err)
	}
	_, otherPub := rsaKeys(t)
	for name, key := range map[string]Key{
		"another RSA key":    otherPub,
		"an EC key":          ecPub,
		"the wrong alg":      {PEM: rsaPub.PEM, Algorithm: "RS512"},
		"an HMAC secret":     secret,
		"garbage as the key": {PEM: "not a key"},
	} {
		if err := Verify([]byte(file), sig, key); err == nil {
			t.Errorf("verified with %s", name)
		}
	}
	for name, bad := range map[string]string{
		"empty":          "",
		"no signatures":  `{"signatures": []}`,
		"two signatures": `{"signatures": ["a.b.c", "d.e.f"]}`,
		"not a JWT":      `{"signatures": ["nope"]}`,
		"a plugin":       `{"signatures": ["a.b.c"], "plugin": "mine"}`,
		"unknown field":  `{"signatures": ["a.b.c"], "extra": 1}`,
	} {
		if err := Verify([]byte(file), []byte(bad), rsaPub); err == nil {
			t.Errorf("%s signature accepted", name)
		}
	}
}

// TestSignFollowsTheKey: with no algorithm named, each key type signs and
// verifies with its own; an algorithm named that the key does not go with
// is refused, HS256 with a public key above all, which would make the
// public key a shared secret.
func TestSignFollowsTheKey(t *testing.T) {
	rsaPriv, rsaPub := rsaKeys(t)
	pkcs8 := func(k any) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	}
	pkix := func(k any) string {
		der, err := x509.MarshalPKIXPublicKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPub, edPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecPriv, ecPub := ecKeys(t)
	for name, keys := range map[string][2]string{
		"RSA":         {rsaPriv.PEM, rsaPub.PEM},
		"ECDSA P-256": {ecPriv.PEM, ecPub.PEM},
		"ECDSA P-384": {pkcs8(p384), pkix(&p384.PublicKey)},
		"Ed25519":     {pkcs8(edPriv), pkix(edPub)},
	} {
		t.Run(name, func(t *testing.T) {
			sig, err := Sign([]byte(file), "waivers.yaml", Key{PEM: keys[0]})
			if err != nil {
				t.Fatal(err)
			}
			if err := Verify([]byte(file), sig, Key{PEM: keys[1]}); err != nil {
				t.Errorf("own signature refused: %v", err)
			}
			for _, alg := range []string{"HS256", "ES256K"} {
				if err := Verify([]byte(file), sig, Key{PEM: keys[1], Algorithm: alg}); err == nil || !strings.Contains(err.Error(), "not "+alg) {
					t.Errorf("verified with %s: %v", alg, err)
				}
			}
		})
	}
	if _, err := Sign([]byte(file), "w.yaml", Key{PEM: pkcs8(p384), Algorithm: "ES256"}); err == nil || !strings.Contains(err.Error(), "an ECDSA P-384 key goes with ES384, not ES256") {
		t.Errorf("a P-384 key with ES256: got %v", err)
	}
}

func TestSignRefusesInvalidFile(t *testing.T) {
	priv, _ := rsaKeys(t)
	if _, err := Sign([]byte("- id: X\n"), "w.yaml", priv); err == nil || !strings.Contains(err.Error(), "ticket is required") {
		t.Errorf("signing an invalid file: got %v", err)
	}
	if _, err := Sign([]byte(file), "w.yaml", Key{PEM: "not a key"}); err == nil {
		t.Error("signed with a key that is not one")
	}
}

func TestLoadVerified(t *testing.T) {
	priv, pub := rsaKeys(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "waivers.yaml")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadVerified(path, pub); err == nil || !strings.Contains(err.Error(), "no signature") ||
		!strings.Contains(err.Error(), "waivers.yaml.sig") {
		t.Errorf("unsigned file: got %v", err)
	}
	sig, err := Sign([]byte(file), path, priv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(SignatureFile(path), sig, 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := LoadVerified(path, pub)
	if err != nil || len(list) != 2 || list[0].Ticket != "SEC-42" {
		t.Fatalf("signed file: %v, %+v", err, list)
	}
	_, other := rsaKeys(t)
	if _, err := LoadVerified(path, other); err == nil || !strings.Contains(err.Error(), "bad signature") {
		t.Errorf("wrong key: got %v", err)
	}
	if err := os.WriteFile(path, []byte(file+"- {id: GH-ENC-001, target: \"*\", justification: j, approved_by: mallory, expires: 2099-01-01, ticket: X}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadVerified(path, pub); err == nil || !strings.Contains(err.Error(), "changed after signing") {
		t.Errorf("an entry added after signing: got %v", err)
	}
	if _, err := Load(path); err != nil {
		t.Errorf("Load without a key ignores the signature: %v", err)
	}
	if _, err := LoadVerified(dir, pub); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a directory: got %v", err)
	}
}
