package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil/testsign"
)

// rsaKeyFiles writes a fresh RSA private key and its public key as PEM files.
func rsaKeyFiles(t *testing.T) (priv, pub string) {
	t.Helper()
	privPEM, pubPEM := testsign.RSAKeyPEM(t)
	dir := t.TempDir()
	priv, pub = filepath.Join(dir, "key.pem"), filepath.Join(dir, "pub.pem")
	if err := os.WriteFile(priv, []byte(privPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, []byte(pubPEM), 0o644); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// rewriteTarGz copies the gzipped tar at src to dst through edit, which
// returns an entry's new content, or nil to drop it.
func rewriteTarGz(t *testing.T, src, dst string, edit func(name string, body []byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, testsign.RewriteTarGz(t, data, edit), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPolicyBundleSigned(t *testing.T) {
	priv, pub := rsaKeyFiles(t)
	_, otherPub := rsaKeyFiles(t)
	dir := t.TempDir()
	pack := filepath.Join(dir, "pack.tar.gz")
	bundle := (*app).policyBundleCommand
	scan := (*app).scanCommand
	hardened := "testdata/rootfs-hardened"

	o := runCommand(t, bundle, "--policy", exportPack(t), "--signing-key", priv, "-o", pack)
	if o.code != 0 {
		t.Fatalf("policy bundle: exit %d\n%s", o.code, o.stderr)
	}

	// The signed bundle scans like the embedded pack.
	want := runCommand(t, scan, "rootfs", hardened, "--format", "json", "--fail-on", "critical")
	got := runCommand(t, scan, "rootfs", hardened, "--policy", pack, "--verification-key", pub, "--format", "json", "--fail-on", "critical")
	if got.code != want.code || got.code == 2 {
		t.Fatalf("scan with the signed bundle: exit %d, embedded pack %d\n%s", got.code, want.code, got.stderr)
	}
	if n, m := strings.Count(got.stdout, `"id":`), strings.Count(want.stdout, `"id":`); n != m || n == 0 {
		t.Errorf("scan with the bundle reports %d results, the embedded pack %d", n, m)
	}

	// One byte changed in one module: refused, naming the module.
	tampered := filepath.Join(dir, "tampered.tar.gz")
	var victim string
	rewriteTarGz(t, pack, tampered, func(name string, body []byte) []byte {
		if victim == "" && strings.HasSuffix(name, ".rego") {
			victim = strings.TrimPrefix(name, "/")
			body = bytes.Clone(body)
			body[len(body)/2] ^= 0x01
		}
		return body
	})
	if victim == "" {
		t.Fatal("no .rego in the bundle")
	}
	o = runCommand(t, scan, "rootfs", hardened, "--policy", tampered, "--verification-key", pub)
	if o.code != 2 || !strings.Contains(o.stderr, victim) {
		t.Errorf("tampered %s: exit %d, want 2 naming it\n%s", victim, o.code, o.stderr)
	}

	// No .signatures.json while a key is given: refused.
	unsigned := filepath.Join(dir, "unsigned.tar.gz")
	rewriteTarGz(t, pack, unsigned, func(name string, body []byte) []byte {
		if strings.HasSuffix(name, ".signatures.json") {
			return nil
		}
		return body
	})
	o = runCommand(t, scan, "rootfs", hardened, "--policy", unsigned, "--verification-key", pub)
	if o.code != 2 || !strings.Contains(o.stderr, ".signatures.json") {
		t.Errorf("no signatures: exit %d, want 2 naming .signatures.json\n%s", o.code, o.stderr)
	}

	// Signed with another key: refused.
	o = runCommand(t, scan, "rootfs", hardened, "--policy", pack, "--verification-key", otherPub)
	if o.code != 2 || !strings.Contains(o.stderr, "verif") {
		t.Errorf("wrong key: exit %d, want 2\n%s", o.code, o.stderr)
	}
}

func TestPolicyBundleErrors(t *testing.T) {
	bundle := (*app).policyBundleCommand
	dir := t.TempDir()
	if o := runCommand(t, bundle); o.code != 2 || !strings.Contains(o.stderr, "-o") {
		t.Errorf("no -o: exit %d, want 2\n%s", o.code, o.stderr)
	}
	bad := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(bad, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "pack.tar.gz")
	if o := runCommand(t, bundle, "--signing-key", bad, "-o", out); o.code != 2 {
		t.Errorf("garbage key: exit %d, want 2\n%s", o.code, o.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a bundle was written with a garbage key")
	}
	if o := runCommand(t, bundle, "--policy", filepath.Join(dir, "missing"), "-o", out); o.code != 2 {
		t.Errorf("missing pack: exit %d, want 2\n%s", o.code, o.stderr)
	}
	// Unsigned is allowed, with a warning.
	if o := runCommand(t, bundle, "-o", out); o.code != 0 || !strings.Contains(o.stderr, "unsigned") {
		t.Errorf("unsigned: exit %d, want 0 and a warning\n%s", o.code, o.stderr)
	}
}
