package testutil

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// SigningKey makes an RSA key and a self-signed certificate with openssl
// in dir, as a platform owner or DKMS makes its signing key.
func SigningKey(t testing.TB, dir, cn string) (key, cert string) {
	t.Helper()
	openssl := Tool(t, "openssl", "openssl")
	key, cert = filepath.Join(dir, cn+".key"), filepath.Join(dir, cn+".crt")
	Run(t, time.Minute, openssl, "req", "-new", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "3650",
		"-subj", "/CN="+cn+"/", "-keyout", key, "-out", cert)
	return key, cert
}

// GRUBImage makes a GRUB EFI core image with grub-mkimage in dir, as the
// gpuhost-rootfs builder makes a disk's BOOTX64.EFI: a PE image, unsigned.
func GRUBImage(t testing.TB, dir string) string {
	t.Helper()
	mkimage := Tool(t, "grub-mkimage", "grub-common")
	if _, err := os.Stat("/usr/lib/grub/x86_64-efi/kernel.img"); err != nil {
		missing(t, "GRUB's x86_64-efi modules are not installed (Debian package grub-efi-amd64-bin)")
	}
	out := filepath.Join(dir, "grubx64.efi")
	Run(t, time.Minute, mkimage, "-O", "x86_64-efi", "-o", out, "-p", "/EFI/debian", "normal", "part_gpt", "fat")
	return out
}

// SBSign signs the PE image in into out with sbsign, as a distribution
// signs its boot loaders and kernels.
func SBSign(t testing.TB, key, cert, in, out string) {
	t.Helper()
	Run(t, time.Minute, Tool(t, "sbsign", "sbsigntool"), "--key", key, "--cert", cert, "--output", out, in)
}

// The appended signature of a kernel module (include/linux/module_signature.h).
const (
	moduleSignatureMagic = "~Module signature appended~\n"
	moduleSignaturePKCS7 = 2
)

// SignModule appends a module signature to file with the kernel's own
// sign-file where linux-kbuild is installed, and otherwise the way
// sign-file makes one: a detached CMS SignedData over the file with no
// attributes and no certificates, the signer named by issuer and serial,
// then struct module_signature and the magic.
func SignModule(t testing.TB, key, cert, file string) {
	t.Helper()
	if tools, _ := filepath.Glob("/usr/lib/linux-kbuild-*/scripts/sign-file"); len(tools) > 0 {
		Run(t, time.Minute, tools[len(tools)-1], "sha512", key, cert, file)
		return
	}
	sig := file + ".p7s"
	Run(t, time.Minute, Tool(t, "openssl", "openssl"), "cms", "-sign", "-binary", "-noattr", "-nocerts", "-nosmimecap",
		"-md", "sha512", "-outform", "DER", "-in", file, "-signer", cert, "-inkey", key, "-out", sig)
	der, err := os.ReadFile(sig)
	if err != nil {
		t.Fatal(err)
	}
	info := make([]byte, 12)
	info[2] = moduleSignaturePKCS7
	binary.BigEndian.PutUint32(info[8:], uint32(len(der)))
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, b := range [][]byte{der, info, []byte(moduleSignatureMagic)} {
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

// ESPImage makes a 64 MiB EFI system partition in a file the way the
// gpuhost-rootfs builder makes a disk's (mkfs.vfat, then mtools), holding
// files (name on the partition -> file here).
func ESPImage(t testing.TB, files map[string]string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "esp.vfat")
	Run(t, time.Minute, Tool(t, "mkfs.vfat", "dosfstools"), "-C", "-F", "32", "-s", "1", "-n", "ESP", img, strconv.Itoa(64<<10))
	mmd, mcopy := Tool(t, "mmd", "mtools"), Tool(t, "mcopy", "mtools")
	made := map[string]bool{}
	for name := range files {
		for dir := filepath.Dir(name); dir != "/"; dir = filepath.Dir(dir) {
			made[dir] = true
		}
	}
	// Parents first: a parent's path is the shorter.
	for _, d := range slices.SortedFunc(maps.Keys(made), func(a, b string) int { return cmp.Compare(len(a), len(b)) }) {
		Run(t, time.Minute, mmd, "-i", img, "::"+d)
	}
	for name, src := range files {
		Run(t, time.Minute, mcopy, "-i", img, src, "::"+name)
	}
	return img
}

// SignedBoot is the root of Debian's signed boot chain as make
// signed-boot unpacks it (shim signed by Microsoft, GRUB and shim's
// helpers by Debian), or the test is skipped (failed under CI).
func SignedBoot(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "out", "signed-boot", "root")
	if _, err := os.Stat(filepath.Join(dir, "usr/lib/shim/shimx64.efi.signed")); err != nil {
		missing(t, fmt.Sprintf("%s has no signed shim: run make signed-boot", dir))
	}
	return dir
}
