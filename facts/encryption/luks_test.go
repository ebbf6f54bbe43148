package encryption

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

func openDevice(t *testing.T, file string) collect.BlockDevice {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return collect.BlockDevice{Name: filepath.Base(file), Size: st.Size(), R: f}
}

func TestLUKSHeaderFromCryptsetup(t *testing.T) {
	for _, tc := range []struct {
		typ, cipher string
		bits        int
	}{
		{"luks2", "aes-xts-plain64", 512},
		{"luks2", "aes-xts-plain64", 256},
		{"luks1", "aes-xts-plain64", 512},
		{"luks1", "aes-xts-plain64", 256},
		{"luks2", "aes-cbc-essiv:sha256", 256},
	} {
		vol, uuid := testutil.LUKSFormat(t, tc.typ, tc.cipher, tc.bits)
		d := openDevice(t, vol)
		h, err := readLUKSHeader(d.R, d.Size)
		if err != nil {
			t.Fatalf("%s %s-%d: %v", tc.typ, tc.cipher, tc.bits, err)
		}
		want := luksHeader{Version: int(tc.typ[4] - '0'), UUID: uuid, Cipher: tc.cipher, KeyBits: tc.bits, VolumeKey: facts.VolumeKey{Origin: facts.KeyUnknown}}
		h.json, h.luks1 = nil, nil
		if !reflect.DeepEqual(h, want) {
			t.Errorf("header %+v, want %+v", h, want)
		}
	}
}

// The whole chain, as an image scan reads it: fstab -> LVM backup ->
// crypttab -> the LUKS header of a partition, matched by UUID.
func TestOfflineCipherFromLUKSHeader(t *testing.T) {
	for _, bits := range []int{256, 512} {
		vol, uuid := testutil.LUKSFormat(t, "luks2", "aes-xts-plain64", bits)
		dir := t.TempDir()
		collecttest.WriteTree(t, dir, map[string]any{
			"etc/fstab":                "/dev/mapper/ubuntu--vg-ubuntu--lv / ext4 defaults 0 1\n",
			"etc/crypttab":             "dm_crypt-0 UUID=" + uuid + " none luks\n",
			"etc/lvm/backup/ubuntu-vg": ubuntuVG("/dev/mapper/dm_crypt-0"),
		})
		env := collecttest.NewEnv(t, dir, false)
		env.Devices = []collect.BlockDevice{openDevice(t, vol)}
		env.Devices[0].Name = "partition 3"
		enc := mustCollect(t, env)
		r := enc.Root
		if !r.Encrypted || hopKinds(r.Hops) != "lvm:lvm-metadata,crypt:crypttab,partition:luks-header" || r.Hops[2].Name != "partition 3" {
			t.Fatalf("root %+v hops %s", r, hopKinds(r.Hops))
		}
		// LUKSFormat's one slot holds a 64-byte key, which the empty
		// passphrase is tried against and does not open. An image's volume
		// is under the image's key; no first-boot enrolment re-encrypts it.
		want := facts.CryptParams{Type: "luks2", Cipher: "aes-xts-plain64", KeyBits: bits, Source: "file",
			Keyslots: []facts.Keyslot{{ID: "0", KDF: "pbkdf2"}}, VolumeKey: &facts.VolumeKey{Origin: facts.KeyFromImage}}
		if c := r.Hops[1].Crypt; c == nil || !reflect.DeepEqual(*c, want) {
			t.Errorf("crypt %+v, want %+v", c, want)
		}
	}
}

// A header that claims more than the device holds, or whose JSON was
// changed after its checksum, is refused; so is a LUKS magic on a device
// of an image whose header then does not parse.
func TestLUKSHeaderDamage(t *testing.T) {
	vol, _ := testutil.LUKSFormat(t, "luks2", "aes-xts-plain64", 512)
	data, err := os.ReadFile(vol)
	if err != nil {
		t.Fatal(err)
	}
	hdr := data[:16<<10]
	read := func(b []byte) error {
		_, err := readLUKSHeader(bytes.NewReader(b), int64(len(b)))
		return err
	}
	if err := read(hdr); err != nil {
		t.Fatalf("the header alone: %v", err)
	}
	if err := read(hdr[:8<<10]); err == nil || !strings.Contains(err.Error(), "larger than the 8192 bytes") {
		t.Errorf("cut header: %v", err)
	}
	tampered := bytes.Clone(hdr)
	i := bytes.Index(tampered, []byte(`"key_size":64`))
	if i < 0 {
		t.Fatalf("no key_size in %q", tampered[4096:4600])
	}
	copy(tampered[i:], `"key_size":32`)
	if err := read(tampered); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("tampered JSON: %v", err)
	}
	huge := bytes.Clone(hdr)
	binary.BigEndian.PutUint64(huge[8:], 1<<40)
	if err := read(huge); err == nil || !strings.Contains(err.Error(), "not one the format allows") {
		t.Errorf("huge hdr_size: %v", err)
	}
	if err := read([]byte("LUKS\xba\xbe")); !errors.Is(err, errNotLUKS) {
		t.Errorf("magic alone: %v", err)
	}
	v9 := bytes.Clone(hdr)
	v9[7] = 9
	if err := read(v9); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("version 9: %v", err)
	}
	_, err = imageLUKSHeaders([]collect.BlockDevice{{Name: "partition 2", Size: int64(len(tampered)), R: bytes.NewReader(tampered)}}, budgetOf(defaultTrialLimits))
	if err == nil || !strings.Contains(err.Error(), "reading the LUKS header of partition 2") {
		t.Errorf("damaged header on an image: %v", err)
	}
	if got, err := imageLUKSHeaders([]collect.BlockDevice{{Name: "partition 1", Size: 4096, R: bytes.NewReader(make([]byte, 4096))}}, budgetOf(defaultTrialLimits)); err != nil || len(got) != 0 {
		t.Errorf("a partition without LUKS: %v %v", got, err)
	}
}

func TestLUKS1HeaderFields(t *testing.T) {
	h := make([]byte, luks1HeaderSize)
	copy(h, luksMagic)
	binary.BigEndian.PutUint16(h[6:], 1)
	copy(h[8:], "cipher_null")
	copy(h[40:], "ecb")
	binary.BigEndian.PutUint32(h[108:], 32)
	copy(h[168:], "0a1b")
	got, err := readLUKSHeader(bytes.NewReader(h), int64(len(h)))
	got.luks1 = nil
	if err != nil || !reflect.DeepEqual(got, luksHeader{Version: 1, UUID: "0a1b", Cipher: "cipher_null-ecb", KeyBits: 256, VolumeKey: facts.VolumeKey{Origin: facts.KeyUnknown}}) {
		t.Errorf("%+v %v", got, err)
	}
	binary.BigEndian.PutUint32(h[108:], 0)
	if _, err := readLUKSHeader(bytes.NewReader(h), int64(len(h))); err == nil {
		t.Error("zero key bytes accepted")
	}
	binary.BigEndian.PutUint32(h[108:], 32)
	h[9] = 0x01
	if _, err := readLUKSHeader(bytes.NewReader(h), int64(len(h))); err == nil {
		t.Error("control byte in the cipher name accepted")
	}
}
