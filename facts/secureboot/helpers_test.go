package secureboot

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// testKey makes a signing key and certificate with openssl in dir.
func testKey(t *testing.T, dir, cn string) (key, cert string) { return testutil.SigningKey(t, dir, cn) }

// grubImage makes an unsigned GRUB EFI image in dir with grub-mkimage.
func grubImage(t *testing.T, dir string) string { return testutil.GRUBImage(t, dir) }

// signedGRUB makes an unsigned GRUB image and a copy sbsign signed with a
// self-signed key of its own.
func signedGRUB(t *testing.T) (unsigned, signed string) {
	t.Helper()
	dir := t.TempDir()
	key, cert := testKey(t, dir, "gpuhost test db")
	unsigned = grubImage(t, dir)
	signed = filepath.Join(dir, "grub.signed.efi")
	sbsign(t, key, cert, unsigned, signed)
	return unsigned, signed
}

// sbsign signs in into out with sbsign.
func sbsign(t *testing.T, key, cert, in, out string) { testutil.SBSign(t, key, cert, in, out) }

// sbverify is the peer: whether sbverify finds a signature of file that
// verifies with cert.
func sbverify(t *testing.T, cert, file string) bool {
	t.Helper()
	err := exec.Command(testutil.Tool(t, "sbverify", "sbsigntool"), "--cert", cert, file).Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return err == nil
}

// signModule appends a module signature to file as sign-file does.
func signModule(t *testing.T, key, cert, file string) { testutil.SignModule(t, key, cert, file) }

// opensslVerifies is the peer of a module signature: openssl cms checks
// the detached signature over the module's bytes with cert, as the kernel
// would with the key.
func opensslVerifies(t *testing.T, sig moduleSignature, module []byte, cert string) bool {
	t.Helper()
	dir := t.TempDir()
	sigFile, content := filepath.Join(dir, "sig.der"), filepath.Join(dir, "content")
	if err := os.WriteFile(sigFile, sig.der, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(content, module[:sig.content], 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testutil.Tool(t, "openssl", "openssl"), "cms", "-verify", "-binary", "-inform", "DER", "-in", sigFile,
		"-content", content, "-certfile", cert, "-nointern", "-noverify", "-out", os.DevNull)
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return err == nil
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// collectFacts runs Collect over env and fails the test unless it
// collected.
func collectFacts(t *testing.T, env *collect.Env) *facts.SecureBoot {
	t.Helper()
	sb, err := Collect(context.Background(), env)
	if err != nil || sb == nil {
		t.Fatalf("Collect: %v", err)
	}
	return sb
}
