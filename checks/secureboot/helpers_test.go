package secureboot

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// testKey makes an RSA key and a self-signed certificate with openssl in
// dir, as a platform owner or DKMS makes its signing key.
func testKey(t *testing.T, dir, cn string) (key, cert string) {
	t.Helper()
	openssl := testutil.Tool(t, "openssl", "openssl")
	key, cert = filepath.Join(dir, cn+".key"), filepath.Join(dir, cn+".crt")
	testutil.Run(t, time.Minute, openssl, "req", "-new", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "3650",
		"-subj", "/CN="+cn+"/", "-keyout", key, "-out", cert)
	return key, cert
}

// grubImage makes a GRUB EFI core image with grub-mkimage, as the
// gpuhost-rootfs builder makes the BOOTX64.EFI of a disk.
func grubImage(t *testing.T, dir string) string {
	t.Helper()
	mkimage := testutil.Tool(t, "grub-mkimage", "grub-common")
	if _, err := os.Stat("/usr/lib/grub/x86_64-efi/kernel.img"); err != nil {
		t.Skip("GRUB's x86_64-efi modules are not installed (Debian package grub-efi-amd64-bin)")
	}
	out := filepath.Join(dir, "grubx64.efi")
	testutil.Run(t, time.Minute, mkimage, "-O", "x86_64-efi", "-o", out, "-p", "/EFI/debian", "normal", "part_gpt", "fat")
	return out
}

// sbsign signs in into out with sbsign, as a distribution signs its boot
// loaders and kernels.
func sbsign(t *testing.T, key, cert, in, out string) {
	t.Helper()
	testutil.Run(t, time.Minute, testutil.Tool(t, "sbsign", "sbsigntool"), "--key", key, "--cert", cert, "--output", out, in)
}

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

// signModule appends a module signature to file with the kernel's own
// sign-file where linux-kbuild is installed, and otherwise the way
// sign-file makes one: a detached CMS SignedData, no attributes, no
// certificates, issuer and serial naming the signer, then struct
// module_signature and the magic.
func signModule(t *testing.T, key, cert, file string) {
	t.Helper()
	if tools, _ := filepath.Glob("/usr/lib/linux-kbuild-*/scripts/sign-file"); len(tools) > 0 {
		testutil.Run(t, time.Minute, tools[len(tools)-1], "sha512", key, cert, file)
		return
	}
	sig := file + ".p7s"
	testutil.Run(t, time.Minute, testutil.Tool(t, "openssl", "openssl"), "cms", "-sign", "-binary", "-noattr", "-nocerts", "-nosmimecap",
		"-md", "sha512", "-outform", "DER", "-in", file, "-signer", cert, "-inkey", key, "-out", sig)
	der, err := os.ReadFile(sig)
	if err != nil {
		t.Fatal(err)
	}
	info := make([]byte, modSigInfoSize)
	info[2] = modSigPKCS7
	binary.BigEndian.PutUint32(info[8:], uint32(len(der)))
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, b := range [][]byte{der, info, []byte(modSigMagic)} {
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

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
