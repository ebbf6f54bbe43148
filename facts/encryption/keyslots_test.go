package encryption

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// emptySlotVolume is a LUKS2 volume made by cryptsetup with four key
// slots: 0 a 64-byte key file (PBKDF2), 1 the empty passphrase (argon2id,
// as the gpuhost-rootfs builder's one-time slot), 2 a passphrase (argon2id),
// 3 the empty passphrase under PBKDF2 (sha512).
func emptySlotVolume(t *testing.T) (vol string) {
	t.Helper()
	vol, _ = testutil.LUKSFormat(t, "luks2", "aes-xts-plain64", 512)
	dir := filepath.Dir(vol)
	key, empty, pass := filepath.Join(dir, "key"), filepath.Join(dir, "empty"), filepath.Join(dir, "pass")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pass, []byte("correct horse battery staple"), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := testutil.Tool(t, "cryptsetup", "cryptsetup-bin")
	argon := []string{"--pbkdf", "argon2id", "--pbkdf-force-iterations", "4", "--pbkdf-memory", "32768", "--pbkdf-parallel", "1"}
	for _, add := range [][]string{
		append([]string{"--key-slot", "1"}, argon...),
		append([]string{"--key-slot", "2"}, argon...),
		{"--key-slot", "3", "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000", "--hash", "sha512"},
	} {
		newKey := empty
		if add[1] == "2" {
			newKey = pass
		}
		args := append([]string{"luksAddKey", "--batch-mode", "--key-file", key}, add...)
		testutil.Run(t, time.Minute, cs, append(args, vol, newKey)...)
	}
	return vol
}

// tryVolume reads the LUKS header of vol and tries its key slots within
// the default limits.
func tryVolume(t *testing.T, vol string) (luksHeader, collect.BlockDevice, facts.CryptParams) {
	t.Helper()
	d := openDevice(t, vol)
	h, err := readLUKSHeader(d.R, d.Size)
	if err != nil {
		t.Fatal(err)
	}
	var p facts.CryptParams
	h.keyslots(d.R, d.Size, &p, budgetOf(defaultTrialLimits))
	return h, d, p
}

func TestKeyslotsFindTheEmptyPassphrase(t *testing.T) {
	vol := emptySlotVolume(t)
	h, d, p := tryVolume(t, vol)
	want := []facts.Keyslot{
		{ID: "0", KDF: "pbkdf2"},
		{ID: "1", KDF: "argon2id", EmptyPassphrase: true},
		{ID: "2", KDF: "argon2id"},
		{ID: "3", KDF: "pbkdf2", EmptyPassphrase: true},
	}
	if p.KeyslotsError != "" || !reflect.DeepEqual(p.Keyslots, want) {
		t.Fatalf("keyslots %+v (error %q), want %+v", p.Keyslots, p.KeyslotsError, want)
	}

	// The same header again comes from what was remembered, and a copy:
	// the caller's changes do not reach the next scan.
	var again facts.CryptParams
	h.keyslots(d.R, d.Size, &again, budgetOf(defaultTrialLimits))
	again.Keyslots[1].FirstBoot = "x"
	var third facts.CryptParams
	h.keyslots(d.R, d.Size, &third, budgetOf(defaultTrialLimits))
	if !reflect.DeepEqual(third.Keyslots, want) {
		t.Errorf("remembered keyslots %+v, want %+v", third.Keyslots, want)
	}
}

// LUKS1 slots are tried too, with the volume's own cipher on their key
// material: XTS, and CBC with ESSIV, LUKS1's old default. LUKS2 volumes of
// either cipher keep their slots' material as cryptsetup chose.
func TestKeyslotsEveryCipher(t *testing.T) {
	cs := testutil.Tool(t, "cryptsetup", "cryptsetup-bin")
	for _, tc := range []struct {
		typ, cipher string
		bits        int
	}{
		{"luks1", "aes-xts-plain64", 512},
		{"luks1", "aes-cbc-essiv:sha256", 256},
		{"luks1", "aes-cbc-plain64", 128},
		{"luks2", "aes-cbc-essiv:sha256", 256},
	} {
		t.Run(tc.typ+" "+tc.cipher, func(t *testing.T) {
			vol, _ := testutil.LUKSFormat(t, tc.typ, tc.cipher, tc.bits)
			dir := filepath.Dir(vol)
			empty := filepath.Join(dir, "empty")
			if err := os.WriteFile(empty, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			testutil.Run(t, time.Minute, cs, "luksAddKey", "--batch-mode", "--key-file", filepath.Join(dir, "key"),
				"--key-slot", "5", "--pbkdf", "pbkdf2", "--pbkdf-force-iterations", "1000", vol, empty)
			_, _, p := tryVolume(t, vol)
			want := []facts.Keyslot{{ID: "0", KDF: "pbkdf2"}, {ID: "5", KDF: "pbkdf2", EmptyPassphrase: true}}
			if p.KeyslotsError != "" || !reflect.DeepEqual(p.Keyslots, want) {
				t.Fatalf("keyslots %+v (error %q), want %+v", p.Keyslots, p.KeyslotsError, want)
			}
		})
	}
}

// A slot whose KDF asks for more than a trial spends is not tried, and
// says what it asked for.
func TestKeyslotsBeyondTheLimitsAreNotTried(t *testing.T) {
	vol := emptySlotVolume(t)
	// Tried within the defaults first: what is remembered is per limits.
	h, d, p := tryVolume(t, vol)
	if len(p.Keyslots) != 4 || !p.Keyslots[1].EmptyPassphrase {
		t.Fatalf("within the defaults: %+v %q", p.Keyslots, p.KeyslotsError)
	}
	slots, err := luks2Slots(d.R, d.Size, h.json, budgetOf(trialLimits{ArgonKiB: 1024, ArgonWork: 1 << 20, PBKDF2Blocks: 500}))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if s.EmptyPassphrase || s.Untried == "" {
			t.Errorf("slot %s: %+v; want it untried", s.ID, s)
		}
	}
	if !strings.Contains(slots[1].Untried, "argon2id with 32768 KiB of memory is more than the 1024 KiB") {
		t.Errorf("slot 1 untried because %q", slots[1].Untried)
	}
	if !strings.Contains(slots[0].Untried, "pbkdf2 with 1000 iterations for a 64-byte key is more than a trial spends (500 blocks)") {
		t.Errorf("slot 0 untried because %q", slots[0].Untried)
	}
}

// Key material the header places past the device's end is not read.
func TestKeyslotsMaterialOutsideTheDevice(t *testing.T) {
	vol := emptySlotVolume(t)
	data, err := os.ReadFile(vol)
	if err != nil {
		t.Fatal(err)
	}
	h, err := readLUKSHeader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	// Cut the device to its header: the slots' areas lie after it.
	cut := int64(len(h.json)) + luks2BinarySize
	slots, err := luks2Slots(bytes.NewReader(data[:cut]), cut, h.json, budgetOf(defaultTrialLimits))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		if s.EmptyPassphrase || s.Untried != "its key material lies outside the device" {
			t.Errorf("slot %s: %+v", s.ID, s)
		}
	}
}

// The anti-forensic merge undoes a split made the way LUKS makes it:
// random stripes, each sum diffused, the last stripe making up the key.
func TestAFMergeUndoesASplit(t *testing.T) {
	for _, tc := range []struct {
		hash             string
		keySize, stripes int
	}{{"sha256", 64, 4000}, {"sha1", 32, 3}, {"sha512", 100, 2}, {"sha256", 16, 1}} {
		h, err := hashFunc(tc.hash)
		if err != nil {
			t.Fatal(err)
		}
		key := bytes.Repeat([]byte{0x5a, 0x13}, tc.keySize/2)
		split := make([]byte, tc.keySize*tc.stripes)
		for i := range split {
			split[i] = byte(i*7 + 3)
		}
		d := make([]byte, tc.keySize)
		for i := range tc.stripes - 1 {
			for j := range d {
				d[j] ^= split[i*tc.keySize+j]
			}
			diffuse(d, h)
		}
		last := split[(tc.stripes-1)*tc.keySize:]
		for j := range d {
			last[j] = d[j] ^ key[j]
		}
		if got := afMerge(split, tc.keySize, tc.stripes, h); !bytes.Equal(got, key) {
			t.Errorf("%s %d×%d: merged %x, want %x", tc.hash, tc.stripes, tc.keySize, got, key)
		}
	}
}

// FuzzKeyslots feeds hostile JSON areas over a small device with limits a
// fuzzer cannot make expensive: nothing panics, nothing opens.
func FuzzKeyslots(f *testing.F) {
	f.Add([]byte(`{"keyslots":{"0":{"type":"luks2","key_size":64,"area":{"type":"raw","offset":"0","size":"4096","encryption":"aes-xts-plain64","key_size":64},"kdf":{"type":"argon2id","time":1,"memory":8,"cpus":1,"salt":"AAAA"},"af":{"type":"luks1","stripes":4,"hash":"sha256"}}},"digests":{"0":{"type":"pbkdf2","keyslots":["0"],"hash":"sha256","iterations":1,"salt":"AAAA","digest":"AAAA"}},"tokens":{"0":{"type":"systemd-tpm2","keyslots":["0"]}}}`))
	f.Add([]byte(`{"keyslots":{"31":{"type":"luks2","key_size":128,"area":{"type":"raw","offset":"512","size":"99999999","encryption":"aes-xts-plain64","key_size":32},"kdf":{"type":"pbkdf2","hash":"sha1","iterations":2,"salt":"AAAA"},"af":{"type":"luks1","stripes":4000,"hash":"sha512"}}}}`))
	f.Add([]byte(`{"keyslots":{"x":{}}}`))
	device := bytes.Repeat([]byte{0xa5}, 64<<10)
	lim := budgetOf(trialLimits{ArgonKiB: 64, ArgonWork: 256, PBKDF2Blocks: 16})
	f.Fuzz(func(t *testing.T, js []byte) {
		slots, err := luks2Slots(bytes.NewReader(device), int64(len(device)), js, lim)
		if err != nil {
			return
		}
		if len(slots) > maxKeyslots {
			t.Fatalf("%d slots", len(slots))
		}
		for _, s := range slots {
			if s.EmptyPassphrase {
				t.Fatalf("slot %s opened on a device of one repeated byte: %+v", s.ID, s)
			}
		}
	})
}

// An image's one-time slot is the one its first-boot enrolment names, and
// only while the enrolment's unit is enabled; any other empty slot stays
// unmarked, for GH-ENC-004 to fail.
func TestOfflineFirstBootSlot(t *testing.T) {
	vol := emptySlotVolume(t)
	uuid := strings.TrimSpace(testutil.Run(t, time.Minute, testutil.Tool(t, "cryptsetup", "cryptsetup-bin"), "luksUUID", vol))
	for _, tc := range []struct {
		name      string
		enabled   bool
		reencrypt string
		want      map[string]string
		wantKey   facts.VolumeKey
	}{
		{"enabled", true, "1", map[string]string{"1": enrollConf}, facts.VolumeKey{Origin: facts.KeyFromImage, FirstBoot: enrollConf}},
		// An enrolment that wipes the slot but keeps the image's key.
		{"no re-encryption", true, "0", map[string]string{"1": enrollConf}, facts.VolumeKey{Origin: facts.KeyFromImage}},
		{"no unit", false, "1", map[string]string{}, facts.VolumeKey{Origin: facts.KeyFromImage}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := map[string]any{
				"etc/fstab":                    "/dev/mapper/gpuhost-root / ext4 defaults 0 1\n",
				"etc/crypttab":                 "gpuhost-root UUID=" + uuid + " none luks,try-empty-password\n",
				"etc/gpuhost/luks-enroll.conf": "LUKS_UUID=" + uuid + "\nLUKS_NAME=gpuhost-root\nPROVISION_SLOT=1\nREENCRYPT=" + tc.reencrypt + "\nTPM2_PCRS=7\n",
			}
			if tc.enabled {
				tree[strings.TrimPrefix(enrollUnit, "/")] = ""
			}
			dir := t.TempDir()
			collecttest.WriteTree(t, dir, tree)
			env := collecttest.NewEnv(t, dir, false)
			env.Devices = []collect.BlockDevice{openDevice(t, vol)}
			enc := mustCollect(t, env)
			c := enc.Root.Hops[0].Crypt
			if c == nil || len(c.Keyslots) != 4 {
				t.Fatalf("crypt %+v", c)
			}
			got := map[string]string{}
			for _, s := range c.Keyslots {
				if s.FirstBoot != "" {
					got[s.ID] = s.FirstBoot
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("first-boot slots %v, want %v", got, tc.want)
			}
			if c.VolumeKey == nil || *c.VolumeKey != tc.wantKey {
				t.Errorf("volume key %+v, want %+v", c.VolumeKey, tc.wantKey)
			}
		})
	}
}

// FuzzLUKS1Keyslots feeds hostile LUKS1 headers over a small device, with
// limits a fuzzer cannot make expensive.
func FuzzLUKS1Keyslots(f *testing.F) {
	seed := make([]byte, luks1HeaderSize)
	copy(seed, luksMagic)
	seed[7] = 1
	copy(seed[8:], "aes")
	copy(seed[40:], "cbc-essiv:sha256")
	copy(seed[72:], "sha256")
	seed[111] = 32
	seed[167] = 2 // digest iterations
	for i := range 8 {
		at := luks1SlotsAt + i*luks1SlotSize
		binary.BigEndian.PutUint32(seed[at:], luks1SlotDisabled)
	}
	binary.BigEndian.PutUint32(seed[luks1SlotsAt:], luks1SlotActive)
	binary.BigEndian.PutUint32(seed[luks1SlotsAt+4:], 2)
	binary.BigEndian.PutUint32(seed[luks1SlotsAt+40:], 8)
	binary.BigEndian.PutUint32(seed[luks1SlotsAt+44:], 4)
	f.Add(seed)
	device := bytes.Repeat([]byte{0x3c}, 64<<10)
	lim := budgetOf(trialLimits{ArgonKiB: 64, ArgonWork: 256, PBKDF2Blocks: 16})
	f.Fuzz(func(t *testing.T, hd []byte) {
		h, err := readLUKSHeader(bytes.NewReader(hd), int64(len(hd)))
		if err != nil || h.Version != 1 {
			return
		}
		slots, err := luks1Slots(bytes.NewReader(device), int64(len(device)), h, lim)
		if err != nil {
			return
		}
		if len(slots) > 8 {
			t.Fatalf("%d slots", len(slots))
		}
		for _, s := range slots {
			if s.EmptyPassphrase {
				t.Fatalf("slot %s opened on a device of one repeated byte: %+v", s.ID, s)
			}
		}
	})
}
