// Package testsign gives tests what signing needs: fresh keys, a way to
// tamper with a signed tar.gz, and the real cosign's verdict on a signed
// image. Policy bundles and waiver files are signed the same way, so their
// tests share these.
package testsign

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// RSAKeyPEM returns a fresh 2048-bit RSA key: the private key as PKCS#1 PEM
// and the public key as PKIX PEM, the forms OPA's bundle signing reads.
func RSAKeyPEM(t testing.TB) (priv, pub string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	priv = string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
	pub = string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	return priv, pub
}

// ECDSAKeyPEM returns a fresh ECDSA P-256 key as cosign uses them: the
// private key as PKCS#8 PEM, or in cosign's encrypted format when password
// is not empty, and the public key as PKIX PEM (cosign.pub).
func ECDSAKeyPEM(t testing.TB, password string) (priv, pub []byte) {
	t.Helper()
	var pf cryptoutils.PassFunc
	if password != "" {
		pf = cryptoutils.StaticPasswordFunc([]byte(password))
	}
	priv, pub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), pf)
	if err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// ECDSAKeyFiles writes a fresh unencrypted ECDSAKeyPEM pair into a temp
// dir and returns the paths of cosign.key and cosign.pub.
func ECDSAKeyFiles(t testing.TB) (priv, pub string) {
	t.Helper()
	k, p := ECDSAKeyPEM(t, "")
	dir := t.TempDir()
	priv, pub = filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub")
	if err := os.WriteFile(priv, k, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, p, 0o644); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// RewriteTarGz returns the gzipped tar data with edit applied to every
// entry: edit returns the entry's new content, or nil to drop it.
func RewriteTarGz(t testing.TB, data []byte, edit func(name string, body []byte) []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if body = edit(h.Name, body); body == nil {
			continue
		}
		h.Size = int64(len(body))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// CosignVerifies runs the real cosign's `verify` and `verify-attestation
// --type slsaprovenance1` on ref with the public key file pub and no
// transparency log, as a user's pipeline would; env adds to cosign's
// environment (registry credentials). The binary is GPUHOST_COSIGN, or
// bin/cosign (make cosign).
func CosignVerifies(t testing.TB, ref, pub string, env []string) {
	t.Helper()
	cosign := os.Getenv("GPUHOST_COSIGN")
	if cosign == "" {
		cosign = testutil.BuiltTool(t, "cosign", "cosign")
	}
	for _, args := range [][]string{
		{"verify", "--key", pub, "--insecure-ignore-tlog=true", ref},
		{"verify-attestation", "--key", pub, "--type", "slsaprovenance1", "--insecure-ignore-tlog=true", ref},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, cosign, args...)
		// Offline: no TUF root can be fetched, so cosign gets a home of
		// its own and warns instead of reading the user's.
		cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir(), "TUF_ROOT="+filepath.Join(t.TempDir(), "tuf")), env...)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Logf("cosign %s: ok\n%s", strings.Join(args, " "), strings.Join(lines[max(0, len(lines)-3):], "\n"))
	}
}
