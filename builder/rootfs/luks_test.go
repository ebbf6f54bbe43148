package rootfs

import (
	"bytes"
	"context"
	"crypto/aes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/xts"
	"golang.org/x/sys/unix"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// TestLUKSRootOpensWithCryptsetup writes an encrypted root partition the way
// a disk build does and reads it back with tools other than the writer:
// cryptsetup reads the header (cipher, key size, sector size, argon2id,
// the one-time slot 0) and gives the volume key slot 0's empty passphrase
// unlocks; OpenSSL's AES-256-XTS (through python3-cryptography) decrypts the ext4
// superblock's sector
// with that key and the sector's plain64 IV; and the whole file system,
// decrypted with that key, passes e2fsck and holds the tree's files. This
// machine has no device-mapper, so the kernel's own dm-crypt read is the
// boot test's (images/e2e_test.go), which boots such a root.
//
// A root of 1 GiB or more is encrypted in 4096-byte sectors, a smaller one
// in 512-byte sectors; each size is written and read back.
func TestLUKSRootOpensWithCryptsetup(t *testing.T) {
	for _, c := range []struct {
		partBytes int64
		sector    int
	}{{48 << 20, 512}, {1<<30 + 16<<20, 4096}} {
		t.Run(fmt.Sprintf("%d MiB", c.partBytes>>20), func(t *testing.T) {
			checkLUKSRoot(t, c.partBytes, c.sector)
		})
	}
}

// checkLUKSRoot writes an encrypted root partition of partBytes and reads
// it back as TestLUKSRootOpensWithCryptsetup says, wanting sector-byte
// encryption sectors.
func checkLUKSRoot(t *testing.T, partBytes int64, sector int) {
	cs := testutil.Tool(t, "cryptsetup", "cryptsetup-bin")
	testutil.KeepDevMapper(t)
	python := testutil.Tool(t, "python3", "python3-cryptography")
	testutil.Tool(t, "mkfs.ext4", "e2fsprogs")
	e2fsck := testutil.Tool(t, "e2fsck", "e2fsprogs")
	debugfs := testutil.Tool(t, "debugfs", "e2fsprogs")
	dir := t.TempDir()
	tree := filepath.Join(dir, "tree")
	must(t, os.MkdirAll(filepath.Join(tree, "etc"), 0o755))
	body := strings.Repeat("gpuhost encrypted root\n", 20000)
	must(t, os.WriteFile(filepath.Join(tree, "etc/hello"), []byte(body), 0o644))

	r, err := newLUKSRoot(diskIDs{})
	must(t, err)
	const partStart = 1 << 20
	raw := filepath.Join(dir, "disk.raw")
	must(t, createSparse(raw, partStart+partBytes+1<<20))
	fsUUID, _ := diskIDs{}.uuid("root file system")
	must(t, writeLUKSRoot(context.Background(), r, dir, raw, tree, fsUUID, partStart, partBytes, packerUI()))
	for _, tmp := range []string{"luks-header.tmp", "root.ext4.tmp", "luks-volume.key.tmp", "luks-provision.key.tmp"} {
		if _, err := os.Stat(filepath.Join(dir, tmp)); err == nil {
			t.Errorf("%s is left in the work directory", tmp)
		}
	}

	part := filepath.Join(dir, "part.img")
	must(t, createSparse(part, partBytes))
	must(t, copyRange(raw, part, partStart, partBytes))
	dump := testutil.Run(t, time.Minute, cs, "luksDump", part)
	for _, want := range []string{"Version:       \t2", "UUID:          \t" + r.UUID, "cipher: aes-xts-plain64", fmt.Sprintf("sector: %d [bytes]", sector), "Cipher key: 512 bits", "PBKDF:      argon2id", "0: luks2"} {
		if !strings.Contains(dump, want) {
			t.Errorf("luksDump lacks %q:\n%s", want, dump)
		}
	}
	key := filepath.Join(dir, "key")
	must(t, os.WriteFile(key, nil, 0o600))
	testutil.Cryptsetup(t, "open", "--test-passphrase", "--key-file", key, "--key-slot", "0", part)
	wrong := filepath.Join(dir, "wrong")
	must(t, os.WriteFile(wrong, []byte(strings.Repeat("0", 64)), 0o600))
	if out, err := exec.Command(cs, "open", "--test-passphrase", "--key-file", wrong, part).CombinedOutput(); err == nil {
		t.Errorf("another key opens the volume: %s", out)
	}
	vk := volumeKey(t, part, key)

	f, err := os.Open(part)
	must(t, err)
	defer f.Close()
	seg, err := readLUKSSegment(f)
	must(t, err)
	if seg.Offset != 16<<20 {
		t.Logf("data segment at %d", seg.Offset)
	}
	// The superblock is at byte 1024 of the file system: in sector
	// 1024/sector of the data segment, whose plain64 IV is its first byte's
	// number of 512-byte units as 16 little-endian bytes.
	if seg.SectorSize != sector {
		t.Fatalf("segment 0 has %d-byte sectors, want %d", seg.SectorSize, sector)
	}
	n, within := 1024/sector, 1024%sector
	enc := make([]byte, sector)
	_, err = f.ReadAt(enc, seg.Offset+int64(n*sector))
	must(t, err)
	iv := make([]byte, 16)
	binary.LittleEndian.PutUint64(iv, uint64(n*sector/512))
	cmd := exec.Command(python, "-c", opensslXTS, hex.EncodeToString(vk), hex.EncodeToString(iv))
	cmd.Stdin = strings.NewReader(string(enc))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	plainSB, err := cmd.Output()
	if err != nil {
		if strings.Contains(stderr.String(), "No module named") {
			testutil.Tool(t, "no-python3-cryptography", "python3-cryptography")
		}
		t.Fatalf("OpenSSL's AES-XTS through python3-cryptography: %v: %s", err, stderr.String())
	}
	if len(plainSB) != sector || binary.LittleEndian.Uint16(plainSB[within+0x38:]) != 0xef53 {
		t.Fatalf("OpenSSL's decryption of sector %d holds no ext4 superblock magic: % x", n, plainSB[within+0x30:within+0x40])
	}

	// The whole file system, decrypted with the key cryptsetup gave.
	fsImg := decryptRoot(t, part, seg.Offset, vk, sector)
	testutil.Run(t, time.Minute, e2fsck, "-fn", fsImg)
	got := testutil.Run(t, time.Minute, debugfs, "-R", "cat /etc/hello", fsImg)
	if !strings.Contains(got, body) {
		t.Errorf("/etc/hello in the decrypted file system is not the tree's (%d bytes)", len(got))
	}
	if out := testutil.Run(t, time.Minute, "blkid", "-p", "-o", "value", "-s", "UUID", fsImg); strings.TrimSpace(out) != fsUUID {
		t.Errorf("the file system's UUID is %q, want %s", out, fsUUID)
	}

	// What mkfs.ext4 did not write stays a hole: the disk is not filled
	// with ciphertext of zeros.
	rf, err := os.Open(raw)
	must(t, err)
	defer rf.Close()
	var st unix.Stat_t
	must(t, unix.Fstat(int(rf.Fd()), &st))
	if used := st.Blocks * 512; used > partBytes/2 {
		t.Errorf("the %d-byte partition takes %d bytes on disk: its unused space was written", partBytes, used)
	}

	// The header records the image's volume key digest, for GH-ENC-005.
	wantTok, err := imageKeyToken(seg.Digest)
	must(t, err)
	if tok := testutil.Cryptsetup(t, "token", "export", "--token-id", "0", part); !jsonEqual(t, tok, string(wantTok)) {
		t.Errorf("token 0 is %s, want %s", tok, wantTok)
	}

	// First boot's re-encryption, with the enrol script's arguments (here
	// offline, on the partition file: no device-mapper) over the image's
	// part of the partition, gives the volume a key of its own and keeps
	// the file system and the token.
	reencrypt := append([]string{"reencrypt", "--batch-mode", "--force-offline-reencrypt", "--disable-locks",
		"--key-file", key, "--key-slot", "0", "--device-size", strconv.FormatInt(partBytes-seg.Offset, 10)}, provisionKDF...)
	testutil.Cryptsetup(t, append(reencrypt, part)...)
	f2, err := os.Open(part)
	must(t, err)
	defer f2.Close()
	seg2, err := readLUKSSegment(f2)
	must(t, err)
	if seg2.Digest == seg.Digest || seg2.Offset != seg.Offset || seg2.SectorSize != seg.SectorSize {
		t.Errorf("after the re-encryption segment 0 is %+v, was %+v", seg2, seg)
	}
	if tok := testutil.Cryptsetup(t, "token", "export", "--token-id", "0", part); !jsonEqual(t, tok, string(wantTok)) {
		t.Errorf("the re-encryption changed token 0 to %s", tok)
	}
	vk2 := volumeKey(t, part, key)
	if bytes.Equal(vk2, vk) {
		t.Error("the re-encryption kept the image's volume key")
	}
	testutil.Run(t, time.Minute, e2fsck, "-fn", decryptRoot(t, part, seg2.Offset, vk2, sector))
	slots := testutil.Run(t, time.Minute, "sh", "-c", "cryptsetup luksDump \"$1\" | "+onlySlotSed, "sh", part)
	if n := strings.Fields(slots); len(n) != 1 {
		t.Errorf("the enrol script's slot listing gives %q after the re-encryption, want one slot", slots)
	}
	testutil.Cryptsetup(t, "open", "--test-passphrase", "--key-file", key, part)
}

// volumeKey is the volume key of the LUKS volume vol, which key opens.
func volumeKey(t *testing.T, vol, key string) []byte {
	t.Helper()
	out := testutil.Cryptsetup(t, "luksDump", "--dump-volume-key", "--batch-mode", "--key-file", key, vol)
	m := regexp.MustCompile(`(?s)MK dump:\s*((?:[0-9a-f]{2}\s*)+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no volume key in:\n%s", out)
	}
	vk, err := hex.DecodeString(strings.Join(strings.Fields(m[1]), ""))
	if err != nil || len(vk) != luksKeyBits/8 {
		t.Fatalf("volume key %q: %v", m[1], err)
	}
	return vk
}

// decryptRoot decrypts the data segment of the partition file part, from
// offset on, with the volume key vk in sector-byte sectors, each under
// the plain64 IV of its first 512-byte unit, into a file system image it
// returns. Holes decrypt to noise, as they read through dm-crypt.
func decryptRoot(t *testing.T, part string, offset int64, vk []byte, sector int) string {
	t.Helper()
	f, err := os.Open(part)
	must(t, err)
	defer f.Close()
	fi, err := f.Stat()
	must(t, err)
	c, err := xts.NewCipher(aes.NewCipher, vk)
	must(t, err)
	fsImg := filepath.Join(t.TempDir(), "fs.ext4")
	out, err := os.Create(fsImg)
	must(t, err)
	defer out.Close()
	buf := make([]byte, 1<<20)
	for at := offset; at < fi.Size(); at += int64(len(buf)) {
		chunk := buf[:min(int64(len(buf)), fi.Size()-at)]
		_, err := f.ReadAt(chunk, at)
		must(t, err)
		for s := 0; s < len(chunk); s += sector {
			c.Decrypt(chunk[s:s+sector], chunk[s:s+sector], uint64((at-offset+int64(s))/512))
		}
		_, err = out.Write(chunk)
		must(t, err)
	}
	must(t, out.Close())
	return fsImg
}

// jsonEqual tells whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%q: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// opensslXTS decrypts stdin with OpenSSL's AES-XTS (through Debian's
// python3-cryptography; the openssl command's enc has no XTS): the key and
// the 16-byte tweak, hex, are its arguments.
const opensslXTS = `import sys
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
d = Cipher(algorithms.AES(bytes.fromhex(sys.argv[1])), modes.XTS(bytes.fromhex(sys.argv[2]))).decryptor()
sys.stdout.buffer.write(d.update(sys.stdin.buffer.read()) + d.finalize())
`

// copyRange copies n bytes of src from offset into the start of dst.
func copyRange(src, dst string, offset, n int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if c, err := io.Copy(out, io.NewSectionReader(in, offset, n)); err != nil || c != n {
		out.Close()
		return fmt.Errorf("copying %d bytes of %s: %d, %v", n, src, c, err)
	}
	return out.Close()
}

func TestReadLUKSSegmentRefusesWhatItCannotWrite(t *testing.T) {
	if _, err := readLUKSSegment(strings.NewReader(strings.Repeat("\x00", 8192))); err == nil || !strings.Contains(err.Error(), "no LUKS2 header") {
		t.Errorf("zeros: %v", err)
	}
}

func TestEncryptionConfig(t *testing.T) {
	for name, c := range map[string]struct {
		enc  EncryptionConfig
		want string
	}{
		"default pcrs":     {EncryptionConfig{LUKS2: true}, ""},
		"pcrs without":     {EncryptionConfig{TPM2PCRs: []int{7}}, "encryption.tpm2_pcrs: set only with encryption.luks2"},
		"pcr out of range": {EncryptionConfig{LUKS2: true, TPM2PCRs: []int{24}}, "24 is not a TPM2 PCR"},
		"pcr twice":        {EncryptionConfig{LUKS2: true, TPM2PCRs: []int{7, 7}}, "7 is listed twice"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := Config{Encryption: c.enc, Distribution: "debian"}
			errs := strings.Join(cfg.prepareDisk(), "\n")
			if c.want == "" && errs != "" || !strings.Contains(errs, c.want) {
				t.Errorf("errors %q, want %q", errs, c.want)
			}
			if c.want == "" && fmt.Sprint(cfg.Encryption.TPM2PCRs) != "[7]" {
				t.Errorf("PCRs default to %v, want [7]", cfg.Encryption.TPM2PCRs)
			}
		})
	}
}

// packerUI is a UI whose output the test drops.
func packerUI() packersdk.Ui {
	return &packersdk.BasicUi{Reader: new(bytes.Buffer), Writer: io.Discard, ErrorWriter: io.Discard, PB: &packersdk.NoopProgressTracker{}}
}

// TestBootAsideComesBack: while the encrypted root is written, the rootfs's
// /boot is moved aside for an empty mount point; it comes back whether the
// write fails or the build stops in the middle of it (Cleanup).
func TestBootAsideComesBack(t *testing.T) {
	work := t.TempDir()
	rootfs := filepath.Join(work, "rootfs")
	must(t, os.MkdirAll(filepath.Join(rootfs, "boot/grub"), 0o755))
	must(t, os.WriteFile(filepath.Join(rootfs, "boot/vmlinuz-6.1"), []byte("kernel"), 0o644))
	c := &Config{WorkDir: work}
	s := &stepDisk{}
	err := s.withoutBoot(c, rootfs, func() error {
		if entries, _ := os.ReadDir(filepath.Join(rootfs, "boot")); len(entries) != 0 {
			t.Errorf("/boot is not empty while the root is written: %v", entries)
		}
		return fmt.Errorf("mkfs failed")
	})
	if err == nil || err.Error() != "mkfs failed" {
		t.Errorf("error %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(rootfs, "boot/vmlinuz-6.1")); err != nil || string(b) != "kernel" {
		t.Errorf("/boot did not come back: %q %v", b, err)
	}

	// The build stops while /boot is aside: Cleanup puts it back.
	entered, stop, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_ = s.withoutBoot(c, rootfs, func() error { close(entered); <-stop; return nil })
	}()
	<-entered
	state := new(multistep.BasicStateBag)
	state.Put(stateUI, packerUI())
	state.Put(multistep.StateCancelled, true)
	s.Cleanup(state)
	close(stop)
	<-done
	if b, err := os.ReadFile(filepath.Join(rootfs, "boot/vmlinuz-6.1")); err != nil || string(b) != "kernel" {
		t.Errorf("/boot did not come back after Cleanup: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(work, "boot.aside.tmp")); err == nil {
		t.Error("boot.aside.tmp is left in the work directory")
	}
}

func TestCrypttabOfTheImageIsNotOverwritten(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	must(t, err)
	defer root.Close()
	must(t, checkNoCrypttab(root))
	must(t, writeRootFile(root, "etc/crypttab", "# <target name> <source device> <key file> <options>\n", 0o644))
	must(t, checkNoCrypttab(root))
	must(t, writeRootFile(root, "etc/crypttab", "data UUID=1 none luks\n", 0o644))
	if err := checkNoCrypttab(root); err == nil || !strings.Contains(err.Error(), `already opens "data"`) {
		t.Errorf("an image's own crypttab entry: %v", err)
	}
}

// The crypttab written before the provisioners must reach the initramfs
// step as written: the disk opens that root, and the manifest recorded it.
func TestCrypttabChangedByAProvisionerIsRefused(t *testing.T) {
	dir := t.TempDir()
	for _, tool := range []string{"usr/bin/dracut", "usr/sbin/cryptsetup", "usr/bin/systemd-cryptenroll", "usr/bin/tpm2"} {
		must(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(tool)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, tool), nil, 0o755))
	}
	state := testState(dir)
	state.Put(stateConfig, &Config{})
	if (&stepLUKSCrypttab{}).Run(context.Background(), state) != multistep.ActionContinue {
		t.Fatal(state.Get("error"))
	}
	r := state.Get(stateLUKS).(*luksRoot)
	root, err := os.OpenRoot(dir)
	must(t, err)
	defer root.Close()
	if b, _ := root.ReadFile("etc/crypttab"); !strings.Contains(string(b), r.Name()+" UUID="+r.UUID+" ") {
		t.Fatalf("crypttab does not open %s:\n%s", r.Name(), b)
	}
	if b, _ := root.ReadFile(dracutConf); string(b) != dracutConfFile {
		t.Errorf("dracut configuration %q", b)
	}
	must(t, checkCrypttabKept(root, r))
	must(t, writeRootFile(root, "etc/crypttab", r.crypttab()+"swap /dev/vdb /dev/urandom swap\n", 0o644))
	if err := checkCrypttabKept(root, r); err == nil || !strings.Contains(err.Error(), "a provisioner changed /etc/crypttab") {
		t.Errorf("a crypttab changed after the builder wrote it: %v", err)
	}
}

// The enrol script parses, and does its work in the one order that leaves
// no host with the image's key and no recovery slot dropped: re-encrypt
// (which keeps only the one-time slot), run the recovery hook while that
// slot still opens the volume, then seal to the TPM2 and wipe the slot.
func TestEnrollScriptOrder(t *testing.T) {
	script := filepath.Join(t.TempDir(), "gpuhost-luks-enroll")
	must(t, os.WriteFile(script, []byte(enrollScriptBody), 0o755))
	testutil.Run(t, time.Minute, "sh", "-n", script)
	if strings.Contains(enrollScriptBody, "@") {
		t.Errorf("a placeholder is left in the script:\n%s", enrollScriptBody)
	}
	last := -1
	for _, step := range []string{"cryptsetup reencrypt --batch-mode --resume-only", "cryptsetup reencrypt --batch-mode --key-file", "REENCRYPT=done", "cryptsetup resize", `"$hook" "$dev" "$empty"`, "systemd-cryptenroll --unlock-key-file", `rm -f "$conf"`} {
		i := strings.Index(enrollScriptBody, step)
		if i < 0 || i < last {
			t.Fatalf("%q is missing or out of order in:\n%s", step, enrollScriptBody)
		}
		last = i
	}
	if !strings.Contains(enrollScriptBody, strings.Join(provisionKDF, " ")) {
		t.Errorf("the re-encryption's new slot does not get the provisioning KDF:\n%s", enrollScriptBody)
	}
}
