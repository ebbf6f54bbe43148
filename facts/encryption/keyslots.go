package encryption

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gpuhost/gpuhost/facts"
	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/xts"
)

// A LUKS key slot holds the volume key encrypted under a key derived from a
// passphrase. Whether the empty passphrase opens a slot is found the only
// way there is: derive its key from "", decrypt the slot's key material,
// merge the anti-forensic stripes, and hold the result to the header's
// digest. Nothing else tells an empty passphrase from a long one, and a slot
// that opens with it gives the disk to anyone who holds it.

// trialLimits bound what trying the empty passphrase may cost: one key slot,
// and every slot of a target together (trialBudget). A header is untrusted
// input: its KDF parameters are the attacker's to choose, so a slot beyond
// the limits is not tried and says so.
type trialLimits struct {
	// ArgonKiB is the most memory an argon2 KDF may ask for, and ArgonWork
	// the most passes times memory (KiB).
	ArgonKiB, ArgonWork uint64
	// PBKDF2Blocks is the most a PBKDF2 slot or digest may cost: its
	// iterations times the hash blocks of the key it derives.
	PBKDF2Blocks uint64
	// TotalArgonWork and TotalPBKDF2Blocks are what all the slots of one
	// target may cost together.
	TotalArgonWork, TotalPBKDF2Blocks uint64
}

// defaultTrialLimits admit the slots gpuhost's builder makes and the PBKDF2
// slots cryptsetup benchmarks to about two seconds, and argon2 slots of up
// to 512 MiB: cryptsetup's own default may ask for 1 GiB, which a scan
// does not spend on one slot unless its budget says so (collect.Budget's
// KDFMemory).
var defaultTrialLimits = trialLimits{ArgonKiB: 512 << 10, ArgonWork: 4 << 20, PBKDF2Blocks: 20_000_000,
	TotalArgonWork: 16 << 20, TotalPBKDF2Blocks: 80_000_000}

const (
	// maxKeyslots bounds the slots tried in one header; LUKS2 allows 32.
	maxKeyslots = 32
	// maxStripes bounds a slot's anti-forensic stripes; cryptsetup writes 4000.
	maxStripes = 4000
	// maxSlotKeyBytes bounds a volume key; 64 bytes is AES-256 in XTS.
	maxSlotKeyBytes = 128
)

// luks2Keyslots is the part of the LUKS2 JSON area a trial needs.
type luks2Keyslots struct {
	Keyslots map[string]luks2Keyslot `json:"keyslots"`
	Digests  map[string]struct {
		Type       string   `json:"type"`
		Keyslots   []string `json:"keyslots"`
		Hash       string   `json:"hash"`
		Iterations uint64   `json:"iterations"`
		Salt       string   `json:"salt"`
		Digest     string   `json:"digest"`
	} `json:"digests"`
	Tokens map[string]struct {
		Type     string   `json:"type"`
		Keyslots []string `json:"keyslots"`
	} `json:"tokens"`
}

type luks2Keyslot struct {
	Type    string `json:"type"`
	KeySize int    `json:"key_size"`
	Area    struct {
		Type       string `json:"type"`
		Offset     string `json:"offset"`
		Size       string `json:"size"`
		Encryption string `json:"encryption"`
		KeySize    int    `json:"key_size"`
	} `json:"area"`
	KDF struct {
		Type       string `json:"type"`
		Hash       string `json:"hash"`
		Iterations uint64 `json:"iterations"`
		Time       uint64 `json:"time"`
		Memory     uint64 `json:"memory"`
		CPUs       uint64 `json:"cpus"`
		Salt       string `json:"salt"`
	} `json:"kdf"`
	AF struct {
		Type    string `json:"type"`
		Stripes int    `json:"stripes"`
		Hash    string `json:"hash"`
	} `json:"af"`
}

// trials remembers the outcome of each header it tried, by the digest of
// the header and its key material: an agent scans the same host every few
// minutes, and a trial costs what the slot's KDF costs.
var trials = struct {
	sync.Mutex
	m map[[sha256.Size]byte][]facts.Keyslot
}{m: map[[sha256.Size]byte][]facts.Keyslot{}}

// maxRememberedTrials bounds trials; a host has a handful of LUKS devices.
const maxRememberedTrials = 64

// luks2Slots tries the empty passphrase on every key slot of the LUKS2
// header whose JSON area is js, on the device r of size bytes. The error
// is for a JSON area that does not describe key slots; a slot that cannot
// be tried is recorded with why.
func luks2Slots(r io.ReaderAt, size int64, js []byte, b *trialBudget) ([]facts.Keyslot, error) {
	var md luks2Keyslots
	if err := json.Unmarshal(js, &md); err != nil {
		return nil, fmt.Errorf("LUKS2 JSON area: %w", err)
	}
	if len(md.Keyslots) > maxKeyslots {
		return nil, fmt.Errorf("LUKS2 header has %d key slots; the format allows %d", len(md.Keyslots), maxKeyslots)
	}
	ids := make([]string, 0, len(md.Keyslots))
	for id := range md.Keyslots {
		if n, err := strconv.Atoi(id); err != nil || n < 0 || n >= maxKeyslots {
			return nil, fmt.Errorf("LUKS2 key slot %q is not a slot number", id)
		}
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})

	// The key material of every slot is read first, bounded by the device,
	// so that the remembered outcome is keyed by all that decides it.
	areas := make(map[string][]byte, len(ids))
	sum := trialDigest(b.lim)
	sum.Write(js)
	for _, id := range ids {
		ks := md.Keyslots[id]
		n, err := ks.materialSize()
		if err != nil {
			continue
		}
		off, err := strconv.ParseInt(ks.Area.Offset, 10, 64)
		if err != nil || off < 0 || off > size || int64(n) > size-off {
			continue
		}
		area := make([]byte, n)
		if _, err := r.ReadAt(area, off); err != nil {
			return nil, fmt.Errorf("reading the key material of LUKS2 key slot %s: %w", id, err)
		}
		areas[id] = area
		sum.Write(area)
	}
	var key [sha256.Size]byte
	sum.Sum(key[:0])
	return remembered(key, func() ([]facts.Keyslot, bool) { return md.try(ids, areas, b) }), nil
}

// try tries the empty passphrase on each slot of ids whose key material
// areas holds, each paid for from b before its work. complete is false when
// b left a slot untried.
func (md luks2Keyslots) try(ids []string, areas map[string][]byte, b *trialBudget) (out []facts.Keyslot, complete bool) {
	out = make([]facts.Keyslot, 0, len(ids))
	complete = true
	for _, id := range ids {
		ks := md.Keyslots[id]
		slot := facts.Keyslot{ID: id, KDF: ks.KDF.Type, Token: md.tokenOf(id)}
		area, ok := areas[id]
		if !ok {
			_, err := ks.materialSize()
			if err == nil {
				err = errors.New("its key material lies outside the device")
			}
			slot.Untried = err.Error()
			out = append(out, slot)
			continue
		}
		argon, blocks, err := md.cost(id, b.lim)
		if err == nil {
			if err = b.charge(argon, blocks); errors.Is(err, errNotPaid) {
				complete = false
			}
		}
		if err != nil {
			slot.Untried = err.Error()
			out = append(out, slot)
			continue
		}
		vk, err := ks.open(nil, area, b.lim)
		release(argon)
		if err != nil {
			slot.Untried = err.Error()
			out = append(out, slot)
			continue
		}
		opens, err := md.digestMatches(id, vk, b.lim)
		clear(vk)
		if err != nil {
			slot.Untried = err.Error()
		}
		slot.EmptyPassphrase = opens
		out = append(out, slot)
	}
	return out, complete
}

// cost is what trying slot id costs, its KDF and the digest that covers it,
// or why the slot is beyond what one trial spends.
func (md luks2Keyslots) cost(id string, lim trialLimits) (argon, blocks uint64, err error) {
	ks := md.Keyslots[id]
	switch k := ks.KDF; k.Type {
	case "argon2i", "argon2id":
		switch {
		case k.Memory == 0 || k.Memory > lim.ArgonKiB:
			return 0, 0, fmt.Errorf("%s with %d KiB of memory is more than the %d KiB a trial spends", k.Type, k.Memory, lim.ArgonKiB)
		case k.Time == 0 || k.Time > lim.ArgonWork/k.Memory:
			return 0, 0, fmt.Errorf("%s with %d passes over %d KiB is more work than a trial spends", k.Type, k.Time, k.Memory)
		}
		argon = k.Memory * k.Time
	case "pbkdf2":
		h, err := hashFunc(k.Hash)
		if err != nil {
			return 0, 0, err
		}
		if blocks = pbkdf2Blocks(k.Iterations, ks.Area.KeySize, h().Size()); k.Iterations == 0 || blocks > lim.PBKDF2Blocks {
			return 0, 0, fmt.Errorf("pbkdf2 with %d iterations for a %d-byte key is more than a trial spends (%d blocks)", k.Iterations, ks.Area.KeySize, lim.PBKDF2Blocks)
		}
	default:
		return 0, 0, fmt.Errorf("KDF %q is not tried", k.Type)
	}
	for _, d := range md.Digests {
		if !slices.Contains(d.Keyslots, id) {
			continue
		}
		h, err := hashFunc(d.Hash)
		if err != nil {
			return 0, 0, err
		}
		want, err := base64.StdEncoding.DecodeString(d.Digest)
		if err != nil || len(want) == 0 || len(want) > 64 {
			return 0, 0, errors.New("the digest's value is not base64")
		}
		n := pbkdf2Blocks(d.Iterations, len(want), h().Size())
		if d.Iterations == 0 || n > lim.PBKDF2Blocks {
			return 0, 0, fmt.Errorf("a digest of %d pbkdf2 iterations is more than a trial spends (%d blocks)", d.Iterations, lim.PBKDF2Blocks)
		}
		return argon, blocks + n, nil
	}
	return 0, 0, errors.New("no digest covers the slot")
}

// trialDigest starts the digest a trial is remembered by: the limits it
// was tried within, then the header and key material the caller adds.
func trialDigest(lim trialLimits) hash.Hash {
	sum := sha256.New()
	_ = binary.Write(sum, binary.BigEndian, lim)
	return sum
}

// remembered returns what try finds for the header whose digest is key,
// trying it only when the header has not been tried before. A try that
// its budget cut short is not remembered: the next scan may have more to
// spend. The caller gets its own copy.
func remembered(key [sha256.Size]byte, try func() ([]facts.Keyslot, bool)) []facts.Keyslot {
	trials.Lock()
	out, ok := trials.m[key]
	trials.Unlock()
	if ok {
		return slices.Clone(out)
	}
	out, complete := try()
	if !complete {
		return out
	}
	trials.Lock()
	if len(trials.m) >= maxRememberedTrials {
		clear(trials.m)
	}
	trials.m[key] = slices.Clone(out)
	trials.Unlock()
	return out
}

// tokenOf is the type of the token bound to slot id (systemd-tpm2, say),
// the lowest-numbered one should several claim it.
func (md luks2Keyslots) tokenOf(id string) string {
	best, typ := -1, ""
	for tid, t := range md.Tokens {
		n, err := strconv.Atoi(tid)
		if err != nil || !slices.Contains(t.Keyslots, id) || best >= 0 && n >= best {
			continue
		}
		best, typ = n, t.Type
	}
	return typ
}

// materialSize is how many bytes of the slot's area hold its stripes,
// whole 512-byte sectors, or why the slot is not one a trial can read.
func (ks luks2Keyslot) materialSize() (int, error) {
	switch {
	case ks.Type != "luks2":
		return 0, fmt.Errorf("key slot type %q is not tried", ks.Type)
	case ks.Area.Type != "raw":
		return 0, fmt.Errorf("key material area type %q is not tried", ks.Area.Type)
	case ks.AF.Type != "luks1":
		return 0, fmt.Errorf("anti-forensic splitter %q is not tried", ks.AF.Type)
	case ks.KeySize <= 0 || ks.KeySize > maxSlotKeyBytes:
		return 0, fmt.Errorf("a %d-byte volume key is not tried", ks.KeySize)
	case ks.AF.Stripes <= 0 || ks.AF.Stripes > maxStripes:
		return 0, fmt.Errorf("%d anti-forensic stripes are more than the %d tried", ks.AF.Stripes, maxStripes)
	}
	n := ks.KeySize * ks.AF.Stripes
	n = (n + 511) / 512 * 512
	areaSize, err := strconv.ParseInt(ks.Area.Size, 10, 64)
	if err != nil || areaSize < int64(n) {
		return 0, fmt.Errorf("the key material area of %q bytes cannot hold %d stripes of %d bytes", ks.Area.Size, ks.AF.Stripes, ks.KeySize)
	}
	return n, nil
}

// open derives the slot's key from passphrase, decrypts its key material
// and merges the stripes into the candidate volume key.
func (ks luks2Keyslot) open(passphrase, area []byte, lim trialLimits) ([]byte, error) {
	if ks.Area.KeySize <= 0 || ks.Area.KeySize > maxSlotKeyBytes {
		return nil, fmt.Errorf("a %d-byte key material key is not tried", ks.Area.KeySize)
	}
	salt, err := base64.StdEncoding.DecodeString(ks.KDF.Salt)
	if err != nil || len(salt) == 0 || len(salt) > 1024 {
		return nil, errors.New("the KDF salt is not base64")
	}
	var kek []byte
	switch ks.KDF.Type {
	case "argon2i", "argon2id":
		k := ks.KDF
		switch {
		case k.Memory == 0 || k.Memory > lim.ArgonKiB:
			return nil, fmt.Errorf("%s with %d KiB of memory is more than the %d KiB a trial spends", k.Type, k.Memory, lim.ArgonKiB)
		case k.Time == 0 || k.Time > lim.ArgonWork/k.Memory:
			return nil, fmt.Errorf("%s with %d passes over %d KiB is more work than a trial spends", k.Type, k.Time, k.Memory)
		case k.CPUs == 0 || k.CPUs > 255:
			return nil, fmt.Errorf("%s with %d lanes is not tried", k.Type, k.CPUs)
		}
		f := argon2.IDKey
		if k.Type == "argon2i" {
			f = argon2.Key
		}
		kek = f(passphrase, salt, uint32(k.Time), uint32(k.Memory), uint8(k.CPUs), uint32(ks.Area.KeySize))
	case "pbkdf2":
		h, err := hashFunc(ks.KDF.Hash)
		if err != nil {
			return nil, err
		}
		if n := pbkdf2Blocks(ks.KDF.Iterations, ks.Area.KeySize, h().Size()); ks.KDF.Iterations == 0 || n > lim.PBKDF2Blocks {
			return nil, fmt.Errorf("pbkdf2 with %d iterations for a %d-byte key is more than a trial spends (%d blocks)", ks.KDF.Iterations, ks.Area.KeySize, lim.PBKDF2Blocks)
		}
		if kek, err = pbkdf2.Key(h, string(passphrase), salt, int(ks.KDF.Iterations), ks.Area.KeySize); err != nil {
			return nil, fmt.Errorf("pbkdf2: %w", err)
		}
	default:
		return nil, fmt.Errorf("KDF %q is not tried", ks.KDF.Type)
	}
	defer clear(kek)
	h, err := hashFunc(ks.AF.Hash)
	if err != nil {
		return nil, err
	}
	return mergeMaterial(ks.Area.Encryption, kek, area, ks.KeySize, ks.AF.Stripes, h)
}

// mergeMaterial decrypts a slot's key material with cipher (a dm-crypt
// spec) under kek, sector by sector from sector 0, and merges its stripes.
func mergeMaterial(cipher string, kek, area []byte, keySize, stripes int, h func() hash.Hash) ([]byte, error) {
	decrypt, err := sectorCipher(cipher, kek)
	if err != nil {
		return nil, err
	}
	plain := make([]byte, len(area))
	defer clear(plain)
	for s := 0; s < len(area)/512; s++ {
		decrypt(plain[s*512:(s+1)*512], area[s*512:(s+1)*512], uint64(s))
	}
	return afMerge(plain, keySize, stripes, h), nil
}

// sectorCipher returns how a 512-byte sector is decrypted under key with
// the dm-crypt cipher spec: AES in XTS with plain64 sector numbers (what
// cryptsetup uses by default), or in CBC with plain, plain64 or
// essiv:sha256 IVs (LUKS1's old default).
func sectorCipher(spec string, key []byte) (func(dst, src []byte, sector uint64), error) {
	switch spec {
	case "aes-xts-plain64":
		if len(key) != 32 && len(key) != 64 {
			return nil, fmt.Errorf("a %d-byte key is not one %s has", len(key), spec)
		}
		c, err := xts.NewCipher(aes.NewCipher, key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
		return c.Decrypt, nil
	case "aes-cbc-plain", "aes-cbc-plain64", "aes-cbc-essiv:sha256":
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec, err)
		}
		iv := func(sector uint64) []byte {
			v := make([]byte, aes.BlockSize)
			if spec == "aes-cbc-plain" {
				sector &= 0xffffffff
			}
			binary.LittleEndian.PutUint64(v, sector)
			return v
		}
		if spec == "aes-cbc-essiv:sha256" {
			salt := sha256.Sum256(key)
			essiv, err := aes.NewCipher(salt[:])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", spec, err)
			}
			plain := iv
			iv = func(sector uint64) []byte {
				v := plain(sector)
				essiv.Encrypt(v, v)
				return v
			}
		}
		return func(dst, src []byte, sector uint64) {
			cipher.NewCBCDecrypter(block, iv(sector)).CryptBlocks(dst, src)
		}, nil
	}
	return nil, fmt.Errorf("key material cipher %q is not tried", spec)
}

// luks1Slots tries the empty passphrase on the eight key slots of the
// LUKS1 header h read from r, a device of size bytes. A LUKS1 slot is
// PBKDF2 with the header's hash, its key material encrypted with the
// volume's own cipher, and one master-key digest covers every slot.
func luks1Slots(r io.ReaderAt, size int64, h luksHeader, b *trialBudget) ([]facts.Keyslot, error) {
	hd := h.luks1
	keyBytes := int(binary.BigEndian.Uint32(hd[108:112]))
	hashName, err := cString(hd[72:104])
	if err != nil {
		return nil, fmt.Errorf("LUKS1 hash: %w", err)
	}
	sum := trialDigest(b.lim)
	sum.Write(hd)
	type slot struct {
		id         int
		iterations uint64
		salt, area []byte
		stripes    int
		untried    string
	}
	var slots []slot
	for i := range 8 {
		at := luks1SlotsAt + i*luks1SlotSize
		switch binary.BigEndian.Uint32(hd[at:]) {
		case luks1SlotDisabled:
			continue
		case luks1SlotActive:
		default:
			return nil, fmt.Errorf("LUKS1 key slot %d is neither active nor disabled", i)
		}
		s := slot{id: i, iterations: uint64(binary.BigEndian.Uint32(hd[at+4:])), salt: hd[at+8 : at+40],
			stripes: int(binary.BigEndian.Uint32(hd[at+44:]))}
		off := int64(binary.BigEndian.Uint32(hd[at+40:])) * 512
		n := (keyBytes*s.stripes + 511) / 512 * 512
		switch {
		case keyBytes > maxSlotKeyBytes:
			s.untried = fmt.Sprintf("a %d-byte volume key is not tried", keyBytes)
		case s.stripes <= 0 || s.stripes > maxStripes:
			s.untried = fmt.Sprintf("%d anti-forensic stripes are more than the %d tried", s.stripes, maxStripes)
		case off > size || int64(n) > size-off:
			s.untried = "its key material lies outside the device"
		default:
			s.area = make([]byte, n)
			if _, err := r.ReadAt(s.area, off); err != nil {
				return nil, fmt.Errorf("reading the key material of LUKS1 key slot %d: %w", i, err)
			}
			sum.Write(s.area)
		}
		slots = append(slots, s)
	}
	var key [sha256.Size]byte
	sum.Sum(key[:0])
	return remembered(key, func() ([]facts.Keyslot, bool) {
		out := make([]facts.Keyslot, 0, len(slots))
		complete := true
		for _, s := range slots {
			ks := facts.Keyslot{ID: strconv.Itoa(s.id), KDF: "pbkdf2", Untried: s.untried}
			if ks.Untried == "" {
				opens, err := luks1Opens(hd, h.Cipher, hashName, keyBytes, s.iterations, s.salt, s.area, s.stripes, b)
				if errors.Is(err, errNotPaid) {
					complete = false
				}
				if err != nil {
					ks.Untried = err.Error()
				}
				ks.EmptyPassphrase = opens
			}
			out = append(out, ks)
		}
		return out, complete
	}), nil
}

// luks1Opens derives one LUKS1 slot's key from the empty passphrase and
// holds the master key it unlocks to the header's digest.
func luks1Opens(hd []byte, cipher, hashName string, keyBytes int, iterations uint64, salt, area []byte, stripes int, b *trialBudget) (bool, error) {
	h, err := hashFunc(hashName)
	if err != nil {
		return false, err
	}
	digestIter := uint64(binary.BigEndian.Uint32(hd[164:168]))
	slotBlocks, digestBlocks := pbkdf2Blocks(iterations, keyBytes, h().Size()), pbkdf2Blocks(digestIter, 20, h().Size())
	for _, n := range []uint64{slotBlocks, digestBlocks} {
		if iterations == 0 || digestIter == 0 || n > b.lim.PBKDF2Blocks {
			return false, fmt.Errorf("pbkdf2 with %d iterations for a %d-byte key (digest: %d) is more than a trial spends (%d blocks)",
				iterations, keyBytes, digestIter, b.lim.PBKDF2Blocks)
		}
	}
	if err := b.charge(0, slotBlocks+digestBlocks); err != nil {
		return false, err
	}
	kek, err := pbkdf2.Key(h, "", salt, int(iterations), keyBytes)
	if err != nil {
		return false, fmt.Errorf("pbkdf2: %w", err)
	}
	defer clear(kek)
	mk, err := mergeMaterial(cipher, kek, area, keyBytes, stripes, h)
	if err != nil {
		return false, err
	}
	defer clear(mk)
	got, err := pbkdf2.Key(h, string(mk), hd[132:164], int(digestIter), 20)
	if err != nil {
		return false, fmt.Errorf("pbkdf2: %w", err)
	}
	return subtle.ConstantTimeCompare(got, hd[112:132]) == 1, nil
}

// Where a LUKS1 header keeps its key slots, and what marks one in use.
const (
	luks1SlotsAt      = 208
	luks1SlotSize     = 48
	luks1SlotActive   = 0x00ac71f3
	luks1SlotDisabled = 0x0000dead
)

// digestMatches holds a candidate volume key of slot id to the digest that
// covers the slot.
func (md luks2Keyslots) digestMatches(id string, vk []byte, lim trialLimits) (bool, error) {
	for _, d := range md.Digests {
		if !slices.Contains(d.Keyslots, id) {
			continue
		}
		if d.Type != "pbkdf2" {
			return false, fmt.Errorf("digest type %q is not tried", d.Type)
		}
		h, err := hashFunc(d.Hash)
		if err != nil {
			return false, err
		}
		salt, err1 := base64.StdEncoding.DecodeString(d.Salt)
		want, err2 := base64.StdEncoding.DecodeString(d.Digest)
		if err1 != nil || err2 != nil || len(want) == 0 || len(want) > 64 || len(salt) > 1024 {
			return false, errors.New("the digest's salt or value is not base64")
		}
		if n := pbkdf2Blocks(d.Iterations, len(want), h().Size()); d.Iterations == 0 || n > lim.PBKDF2Blocks {
			return false, fmt.Errorf("a digest of %d pbkdf2 iterations is more than a trial spends (%d blocks)", d.Iterations, lim.PBKDF2Blocks)
		}
		got, err := pbkdf2.Key(h, string(vk), salt, int(d.Iterations), len(want))
		if err != nil {
			return false, fmt.Errorf("pbkdf2: %w", err)
		}
		return subtle.ConstantTimeCompare(got, want) == 1, nil
	}
	return false, errors.New("no digest covers the slot")
}

// afMerge undoes LUKS's anti-forensic split: the stripes XORed together,
// each sum but the last diffused with the hash.
func afMerge(src []byte, keySize, stripes int, h func() hash.Hash) []byte {
	d := make([]byte, keySize)
	for i := range stripes - 1 {
		subtle.XORBytes(d, d, src[i*keySize:(i+1)*keySize])
		diffuse(d, h)
	}
	subtle.XORBytes(d, d, src[(stripes-1)*keySize:stripes*keySize])
	return d
}

// diffuse replaces each hash-sized block of d by the hash of its index
// (big-endian) and the block, the last block cut to what is left.
func diffuse(d []byte, newHash func() hash.Hash) {
	h := newHash()
	size := h.Size()
	var iv [4]byte
	for i, at := 0, 0; at < len(d); i, at = i+1, at+size {
		end := min(at+size, len(d))
		h.Reset()
		binary.BigEndian.PutUint32(iv[:], uint32(i))
		h.Write(iv[:])
		h.Write(d[at:end])
		copy(d[at:end], h.Sum(nil))
	}
}

// hashFunc is the hash a LUKS header names.
func hashFunc(name string) (func() hash.Hash, error) {
	switch strings.ToLower(name) {
	case "sha1":
		return sha1.New, nil
	case "sha256":
		return sha256.New, nil
	case "sha512":
		return sha512.New, nil
	}
	return nil, fmt.Errorf("hash %q is not tried", name)
}
