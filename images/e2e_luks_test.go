package images

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/testsign"
	"github.com/gpuhost/gpuhost/target/diskimage"
)

// checkLUKSDisk reads the encrypted disk as a machine that boots it would:
// the root partition's LUKS2 header (cryptsetup luksDump, on the partition
// cut out of the disk: aes-xts-plain64, a 512-bit key, argon2id, the one
// key slot 0 and no token yet), which slot 0's empty passphrase opens and
// a wrong one does not; the /boot partition (debugfs) holds GRUB; the
// tree's crypttab opens the volume by its UUID.
func checkLUKSDisk(t *testing.T, raw string, enc diskimage.EncryptedRoot, parts []diskimage.Partition, tree string) string {
	t.Helper()
	// cryptsetup open, even of a file, makes /dev/mapper/control.
	testutil.KeepDevMapper(t)
	if len(parts) != 4 || enc.Partition.Index != 4 {
		t.Fatalf("want BIOS boot, ESP, /boot and the LUKS2 root, found %d partitions, the root on %d", len(parts), enc.Partition.Index)
	}
	dir := t.TempDir()
	header := filepath.Join(dir, "root-partition")
	src, err := os.Open(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	hdr := make([]byte, 16<<20)
	if _, err := src.ReadAt(hdr, enc.Partition.Start); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(header, hdr, 0o600); err != nil {
		t.Fatal(err)
	}
	// luksFormat's data segment starts 16 MiB in; the header is all there.
	if err := os.Truncate(header, enc.Partition.Size); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("cryptsetup", "luksDump", header).CombinedOutput()
	dump := string(out)
	if err != nil {
		t.Fatalf("cryptsetup luksDump of the root partition: %v\n%s", err, out)
	}
	for _, want := range []string{"Version:       \t2", "UUID:          \t" + enc.UUID, "cipher: aes-xts-plain64", "Cipher key: 512 bits", "PBKDF:      argon2id", "  0: luks2"} {
		if !strings.Contains(dump, want) {
			t.Errorf("the root's LUKS2 header lacks %q:\n%s", want, dump)
		}
	}
	if strings.Contains(dump, "  1: luks2") || strings.Contains(dump, "systemd-tpm2") {
		t.Errorf("the baked root has more than its one-time key slot:\n%s", dump)
	}
	// The header records which volume key the image has (GH-ENC-005 reads
	// it on the booted host).
	if !strings.Contains(dump, luksImageKeyToken) {
		t.Errorf("the baked root's header has no %s token:\n%s", luksImageKeyToken, dump)
	}
	for key, opens := range map[string]bool{"": true, "not the key": false} {
		keyFile := filepath.Join(dir, "key")
		if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("cryptsetup", "open", "--test-passphrase", "--key-file", keyFile, header).CombinedOutput()
		if (err == nil) != opens {
			t.Errorf("the passphrase %q opens the disk's root: %v, want %v (%v: %s)", key, err == nil, opens, err, out)
		}
	}
	var boot diskimage.Partition
	for _, p := range parts {
		if p.Label == "boot" {
			boot = p
		}
	}
	bootFS := fmt.Sprintf("%s?offset=%d", raw, boot.Start)
	for _, f := range []string{"/grub/grub.cfg", "/grub/i386-pc/core.img", "/grub/x86_64-efi/core.efi"} {
		if out, err := exec.Command("debugfs", "-R", "stat "+f, bootFS).CombinedOutput(); err != nil || strings.Contains(string(out), "not found") {
			t.Errorf("the /boot partition lacks %s: %v %s", f, err, out)
		}
	}
	if ct, err := os.ReadFile(filepath.Join(tree, "etc/crypttab")); err != nil || !strings.Contains(string(ct), "UUID="+enc.UUID) {
		t.Errorf("the tree's /etc/crypttab does not open UUID=%s: %q %v", enc.UUID, ct, err)
	}
	t.Logf("the root: LUKS2 %s on partition %d, %s", enc.UUID, enc.Partition.Index, "aes-xts-plain64, 512-bit key, argon2id, key slot 0 only")
	return luksDigests(dump)
}

// luksImage is what the boot tests compare a booted host's root header
// with: the image's LUKS UUID and its volume key digests (luksDigests).
type luksImage struct {
	uuid, digests string
}

// luksImageKeyToken is the type of the token the builder records the
// image's volume key digest in, as luksDump lists it.
const luksImageKeyToken = "gpuhost-image-key"

// luksDigests is the Digests section of a luksDump listing: the salt and
// PBKDF2 digest of each volume key, which change when the volume is
// re-encrypted with another key.
func luksDigests(dump string) string {
	_, d, ok := strings.Cut(dump, "\nDigests:\n")
	if !ok {
		return ""
	}
	return d
}

// luksSlots lists the key slot numbers of a luksDump listing.
func luksSlots(dump string) []string {
	_, rest, _ := strings.Cut(dump, "\nKeyslots:\n")
	rest, _, _ = strings.Cut(rest, "\nTokens:\n")
	var slots []string
	for _, m := range regexp.MustCompile(`(?m)^  ([0-9]+): luks2$`).FindAllStringSubmatch(rest, -1) {
		slots = append(slots, m[1])
	}
	return slots
}

// checkPublished: the gate pushed the encrypted image it passed, and the
// pre-deploy gate accepts it from its referrers: gpuhost verify, and the
// real cosign's verify and verify-attestation with the public key.
func checkPublished(t *testing.T, log []byte, pub string) {
	t.Helper()
	m := regexp.MustCompile(`gpuhost-gate: pushed (\S+)`).FindAllSubmatch(log, -1)
	if len(m) == 0 {
		t.Errorf("the gate published nothing:\n%s", lastLine(string(log)))
		return
	}
	ref := string(m[len(m)-1][1])
	gpuhost := mustAbs(t, envOr("GPUHOST_BIN", "../bin/gpuhost"))
	if out, err := exec.Command(gpuhost, "verify", ref, "--key", pub, "--max-age", "1d", "--fail-on", "high").CombinedOutput(); err != nil {
		t.Errorf("gpuhost verify %s: %v\n%s", ref, err, out)
	}
	testsign.CosignVerifies(t, ref, pub, nil)
	t.Logf("published %s; gpuhost verify and cosign verify, verify-attestation: ok", ref)
}

// bakedLUKSDisk reads a baked disk whose root is encrypted, through a raw
// copy it removes: the scanner must say the root is encrypted rather than
// open it, and checkLUKSDisk then checks the four partitions, the root's
// LUKS2 header with its one one-time key slot, and GRUB on /boot against
// the tree the root was made from.
func bakedLUKSDisk(t *testing.T, disk, tree string) luksImage {
	t.Helper()
	raw := filepath.Join(t.TempDir(), "disk.raw")
	if out, err := exec.Command("qemu-img", "convert", "-O", "raw", disk, raw).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img convert %s: %v\n%s", disk, err, out)
	}
	defer os.Remove(raw)
	if _, err := diskimage.Open(raw); !errors.As(err, new(*diskimage.EncryptedRootError)) {
		t.Fatalf("the baked disk opens without its encrypted root being said: %v", err)
	}
	img, err := diskimage.Options{EncryptedRoot: true}.Open(context.Background(), raw)
	if err != nil {
		t.Fatalf("the baked disk: %v", err)
	}
	enc := *img.Encrypted
	parts, _ := img.Partitions()
	img.Close()
	return luksImage{uuid: enc.UUID, digests: checkLUKSDisk(t, raw, enc, parts, tree)}
}
