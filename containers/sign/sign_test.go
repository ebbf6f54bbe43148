package sign_test

import (
	"bytes"
	"context"
	"crypto/elliptic"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/gpuhost/gpuhost/containers/provenance"
	"github.com/gpuhost/gpuhost/containers/sign"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/testsign"
)

// pushed is a random image in an in-process registry, by digest.
func pushed(t *testing.T) name.Digest {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(strings.TrimPrefix(srv.URL, "http://") + "/gpu/img:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Digest(d.String())
}

func keys(t *testing.T, password string) (sign.Signer, sign.Verifier, []byte) {
	t.Helper()
	priv, pub := testsign.ECDSAKeyPEM(t, password)
	s, err := sign.LoadPrivateKey(priv, []byte(password))
	if err != nil {
		t.Fatal(err)
	}
	v, err := sign.LoadPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return s, v, pub
}

func statement(t *testing.T, d name.Digest) []byte {
	t.Helper()
	st, err := provenance.Statement(provenance.Build{
		Repository: d.Context().Name(), ImageDigest: d.DigestStr(), PluginVersion: "0.1.0",
		Gate:     provenance.Gate{Verdict: provenance.VerdictPass, PolicyDigest: "sha256:" + strings.Repeat("ab", 32), FailOn: "high"},
		Evidence: []provenance.Evidence{{Name: provenance.Report, Digest: "sha256:" + strings.Repeat("cd", 32)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestSignAndVerify(t *testing.T) {
	d := pushed(t)
	s, v, _ := keys(t, "")
	ctx := context.Background()
	if err := sign.VerifySignature(ctx, v, d); !errors.Is(err, sign.ErrNotFound) {
		t.Fatalf("unsigned image: err = %v, want ErrNotFound", err)
	}
	p, err := sign.Sign(ctx, s, d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(p.Tag, ":sha256-"+strings.TrimPrefix(d.DigestStr(), "sha256:")+".sig") {
		t.Errorf("signature tag %s", p.Tag)
	}
	if err := sign.VerifySignature(ctx, v, d); err != nil {
		t.Fatal(err)
	}
	_, other, _ := keys(t, "")
	if err := sign.VerifySignature(ctx, other, d); err == nil {
		t.Error("another key verifies the signature")
	}
	// A signature of this image carried to another digest does not
	// verify there: the payload names the digest.
	img2 := d.Context().Digest("sha256:" + strings.Repeat("0", 64))
	if err := copyTag(d, img2, "sig"); err != nil {
		t.Fatal(err)
	}
	if err := sign.VerifySignature(ctx, v, img2); err == nil || !strings.Contains(err.Error(), "names "+d.DigestStr()) {
		t.Errorf("a signature moved to another digest: err = %v", err)
	}
	// A second key adds a signature; the first still verifies.
	s2, v2, _ := keys(t, "")
	if _, err := sign.Sign(ctx, s2, d); err != nil {
		t.Fatal(err)
	}
	for _, k := range []sign.Verifier{v, v2} {
		if err := sign.VerifySignature(ctx, k, d); err != nil {
			t.Error(err)
		}
	}
}

// copyTag copies from's .sig or .att image to to's tag.
func copyTag(from, to name.Digest, suffix string) error {
	src := from.Context().Tag(strings.Replace(from.DigestStr(), ":", "-", 1) + "." + suffix)
	dst := to.Context().Tag(strings.Replace(to.DigestStr(), ":", "-", 1) + "." + suffix)
	img, err := remote.Image(src)
	if err != nil {
		return err
	}
	return remote.Write(dst, img)
}

func TestAttestAndVerify(t *testing.T) {
	d := pushed(t)
	s, v, _ := keys(t, "")
	ctx := context.Background()
	st := statement(t, d)
	if _, err := sign.Attest(ctx, s, d, st, provenance.PredicateType); err != nil {
		t.Fatal(err)
	}
	got, err := sign.VerifyAttestations(ctx, v, d, provenance.PredicateType)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !bytes.Equal(got[0], st) {
		t.Fatalf("payloads %q, want the statement", got)
	}
	if _, err := sign.VerifyAttestations(ctx, v, d, "https://example.com/other"); !errors.Is(err, sign.ErrNotFound) {
		t.Errorf("another predicate type: err = %v, want ErrNotFound", err)
	}
	_, other, _ := keys(t, "")
	if _, err := sign.VerifyAttestations(ctx, other, d, provenance.PredicateType); err == nil {
		t.Error("another key verifies the attestation")
	}
}

func TestLoadKeys(t *testing.T) {
	priv, _ := testsign.ECDSAKeyPEM(t, "pw")
	if !bytes.Contains(priv, []byte("ENCRYPTED SIGSTORE PRIVATE KEY")) {
		t.Fatalf("not cosign's encrypted format:\n%s", priv)
	}
	if _, err := sign.LoadPrivateKey(priv, []byte("pw")); err != nil {
		t.Errorf("encrypted key: %v", err)
	}
	for _, pw := range []string{"", "wrong"} {
		_, err := sign.LoadPrivateKey(priv, []byte(pw))
		if err == nil {
			t.Errorf("password %q opened the key", pw)
		} else if strings.Contains(err.Error(), "ENCRYPTED") || strings.Contains(err.Error(), string(priv[40:60])) {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
	rsaPriv, rsaPub := testsign.RSAKeyPEM(t)
	if _, err := sign.LoadPrivateKey([]byte(rsaPriv), nil); err == nil || !strings.Contains(err.Error(), "want an ECDSA P-256 key") {
		t.Errorf("RSA key: err = %v", err)
	}
	if _, err := sign.LoadPublicKey([]byte(rsaPub)); err == nil {
		t.Error("RSA public key accepted")
	}
	p384, _, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P384(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.LoadPrivateKey(p384, nil); err == nil {
		t.Error("P-384 key accepted")
	}
}

// TestCosignVerifies runs the real cosign (make cosign builds it into bin/)
// against what Sign and Attest wrote: cosign's key-based, offline
// verification must accept both, and refuse another key.
func TestCosignVerifies(t *testing.T) {
	cosign := testutil.BuiltTool(t, "cosign", "cosign")
	d := pushed(t)
	s, _, pub := keys(t, "")
	ctx := context.Background()
	if _, err := sign.Sign(ctx, s, d); err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Attest(ctx, s, d, statement(t, d), provenance.PredicateType); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pubFile := filepath.Join(dir, "cosign.pub")
	if err := os.WriteFile(pubFile, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, otherPub := keys(t, "")
	otherFile := filepath.Join(dir, "other.pub")
	if err := os.WriteFile(otherFile, otherPub, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range cosignVerifyArgs(pubFile, d.String()) {
		out, err := cosignRun(t, cosign, args...)
		if err != nil {
			t.Errorf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		args[2] = otherFile
		if out, err := cosignRun(t, cosign, args...); err == nil {
			t.Errorf("cosign %s accepted another key:\n%s", strings.Join(args, " "), out)
		}
	}
}

// cosignVerifyArgs are the two cosign commands that check an image
// offline with a key.
func cosignVerifyArgs(key, ref string) [][]string {
	return [][]string{
		{"verify", "--key", key, "--insecure-ignore-tlog=true", ref},
		{"verify-attestation", "--key", key, "--type", "slsaprovenance1", "--insecure-ignore-tlog=true", ref},
	}
}

func cosignRun(t *testing.T, cosign string, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cosign, args...)
	// No TUF root is reachable offline: a cosign home of its own, so the
	// test neither reads nor writes the user's.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "TUF_ROOT="+t.TempDir())
	return cmd.CombinedOutput()
}
