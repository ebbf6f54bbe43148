package encryption

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/gpuhost/gpuhost/facts"
	"io"
	"slices"
	"strconv"
	"strings"
)

// luksMagic opens every LUKS header (cryptsetup's on-disk formats, LUKS1 and
// LUKS2).
var luksMagic = []byte{'L', 'U', 'K', 'S', 0xba, 0xbe}

const (
	// luks1HeaderSize is the fixed part of a LUKS1 header up to the key
	// slots; the fields read here all lie in it.
	luks1HeaderSize = 592
	// luks2BinarySize is the binary header that precedes the JSON area.
	luks2BinarySize = 4096
	// luks2MaxHeader is the largest hdr_size the LUKS2 format allows.
	luks2MaxHeader = 4 << 20
)

// luksHeader is what a LUKS header says about the volume's cipher.
type luksHeader struct {
	Version int
	UUID    string
	// Cipher is the dm-crypt spec: cipher-mode, as in aes-xts-plain64.
	Cipher  string
	KeyBits int
	// VolumeKey is where the volume key came from, as the header tells.
	VolumeKey facts.VolumeKey
	// Tokens are a LUKS2 header's tokens.
	Tokens []facts.LUKSToken
	// json is a LUKS2 header's JSON area, which describes its key slots;
	// luks1 is a LUKS1 header's fixed part, which holds them.
	json, luks1 []byte
}

// errNotLUKS says the device does not start with a LUKS header.
var errNotLUKS = errors.New("no LUKS header")

// readLUKSHeader reads the header at the start of r, a device or file of
// size bytes. Every read is bounded by size, so a header that claims more
// than the device holds is an error, not a read past its end.
func readLUKSHeader(r io.ReaderAt, size int64) (luksHeader, error) {
	if size < luks1HeaderSize {
		return luksHeader{}, errNotLUKS
	}
	head := make([]byte, luks1HeaderSize)
	if _, err := r.ReadAt(head, 0); err != nil {
		return luksHeader{}, err
	}
	if !bytes.Equal(head[:6], luksMagic) {
		return luksHeader{}, errNotLUKS
	}
	switch v := binary.BigEndian.Uint16(head[6:8]); v {
	case 1:
		return parseLUKS1(head)
	case 2:
		return readLUKS2(r, size)
	default:
		return luksHeader{}, fmt.Errorf("LUKS version %d is not known", v)
	}
}

// cString is a NUL-padded header field, which must be printable ASCII.
func cString(b []byte) (string, error) {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("field %q is not printable text", b)
		}
	}
	return string(b), nil
}

func parseLUKS1(h []byte) (luksHeader, error) {
	name, err := cString(h[8:40])
	if err != nil {
		return luksHeader{}, fmt.Errorf("LUKS1 cipher name: %w", err)
	}
	mode, err := cString(h[40:72])
	if err != nil {
		return luksHeader{}, fmt.Errorf("LUKS1 cipher mode: %w", err)
	}
	uuid, err := cString(h[168:208])
	if err != nil {
		return luksHeader{}, fmt.Errorf("LUKS1 UUID: %w", err)
	}
	keyBytes := binary.BigEndian.Uint32(h[108:112])
	if name == "" || keyBytes == 0 || keyBytes > 1024 {
		return luksHeader{}, fmt.Errorf("LUKS1 header names cipher %q with a key of %d bytes", name, keyBytes)
	}
	cipher := name
	if mode != "" {
		cipher += "-" + mode
	}
	// LUKS1 has no tokens: nothing records an image's key.
	vk := facts.VolumeKey{Origin: facts.KeyUnknown}
	return luksHeader{Version: 1, UUID: uuid, Cipher: cipher, KeyBits: int(keyBytes) * 8, VolumeKey: vk, luks1: h}, nil
}

// luks2Metadata is the part of the LUKS2 JSON area read here.
type luks2Metadata struct {
	Keyslots map[string]struct {
		KeySize int `json:"key_size"`
	} `json:"keyslots"`
	Segments map[string]struct {
		Type       string `json:"type"`
		Encryption string `json:"encryption"`
	} `json:"segments"`
	Digests map[string]struct {
		Keyslots []string `json:"keyslots"`
		Segments []string `json:"segments"`
		keyDigest
	} `json:"digests"`
	Tokens map[string]struct {
		Type string `json:"type"`
		keyDigest
	} `json:"tokens"`
	Config struct {
		Requirements struct {
			Mandatory []string `json:"mandatory"`
		} `json:"requirements"`
	} `json:"config"`
}

// keyDigest identifies a volume key without revealing it: the salt and
// PBKDF2 digest a LUKS2 header keeps of it, which the gpuhost-rootfs
// builder copies into its gpuhost-image-key token.
type keyDigest struct {
	Salt   string `json:"salt"`
	Digest string `json:"digest"`
}

// imageKeyToken is the type of the token the gpuhost-rootfs builder records
// an image's volume key digest in.
const imageKeyToken = "gpuhost-image-key"

// volumeKey tells from the header's tokens and digests whether the volume
// is still under the image's key, and whether a re-encryption is
// unfinished (cryptsetup marks the header with an online-reencrypt
// requirement until it is done).
func (md luks2Metadata) volumeKey() facts.VolumeKey {
	vk := facts.VolumeKey{Origin: facts.KeyUnknown}
	for _, r := range md.Config.Requirements.Mandatory {
		if strings.HasPrefix(r, "online-reencrypt") {
			vk.Reencrypting = true
		}
	}
	for _, t := range md.Tokens {
		if t.Type != imageKeyToken || t.Salt == "" || t.Digest == "" {
			continue
		}
		if vk.Origin == facts.KeyUnknown {
			vk.Origin = facts.KeyOfHost
		}
		for _, d := range md.Digests {
			if d.keyDigest == t.keyDigest && len(d.Segments) > 0 {
				vk.Origin = facts.KeyFromImage
			}
		}
	}
	return vk
}

func readLUKS2(r io.ReaderAt, size int64) (luksHeader, error) {
	bin := make([]byte, luks2BinarySize)
	if size < luks2BinarySize {
		return luksHeader{}, fmt.Errorf("LUKS2 header cut short: %d bytes", size)
	}
	if _, err := r.ReadAt(bin, 0); err != nil {
		return luksHeader{}, err
	}
	hdrSize := binary.BigEndian.Uint64(bin[8:16])
	if !validLUKS2Size(hdrSize) {
		return luksHeader{}, fmt.Errorf("LUKS2 header size %d is not one the format allows", hdrSize)
	}
	if int64(hdrSize) > size {
		return luksHeader{}, fmt.Errorf("LUKS2 header of %d bytes is larger than the %d bytes there are", hdrSize, size)
	}
	uuid, err := cString(bin[168:208])
	if err != nil {
		return luksHeader{}, fmt.Errorf("LUKS2 UUID: %w", err)
	}
	area := make([]byte, hdrSize-luks2BinarySize)
	if _, err := r.ReadAt(area, luks2BinarySize); err != nil {
		return luksHeader{}, err
	}
	if err := checkLUKS2Sum(bin, area); err != nil {
		return luksHeader{}, err
	}
	if i := bytes.IndexByte(area, 0); i >= 0 {
		area = area[:i]
	}
	var md luks2Metadata
	if err := json.Unmarshal(area, &md); err != nil {
		return luksHeader{}, fmt.Errorf("LUKS2 JSON area: %w", err)
	}
	cipher, bits, err := md.volumeCipher()
	if err != nil {
		return luksHeader{}, err
	}
	var toks struct {
		Tokens map[string]luks2Token `json:"tokens"`
	}
	if err := json.Unmarshal(area, &toks); err != nil {
		return luksHeader{}, fmt.Errorf("LUKS2 JSON area tokens: %w", err)
	}
	return luksHeader{Version: 2, UUID: uuid, Cipher: cipher, KeyBits: bits, VolumeKey: md.volumeKey(), Tokens: tokens(toks.Tokens), json: area}, nil
}

// validLUKS2Size tells whether n is a header size the format allows: a
// power of two from 16 KiB to 4 MiB.
func validLUKS2Size(n uint64) bool {
	return n >= 16<<10 && n <= luks2MaxHeader && n&(n-1) == 0
}

// checkLUKS2Sum verifies the header checksum, which covers the binary
// header, with its checksum field zeroed, and the JSON area.
func checkLUKS2Sum(bin, area []byte) error {
	alg, err := cString(bin[72:104])
	if err != nil {
		return fmt.Errorf("LUKS2 checksum algorithm: %w", err)
	}
	if alg != "sha256" {
		// Other algorithms are legal but rare; the header is still parsed,
		// with its JSON held to the same bounds.
		return nil
	}
	h := sha256.New()
	zeroed := slices.Clone(bin)
	clear(zeroed[448:512])
	h.Write(zeroed)
	h.Write(area)
	if !bytes.Equal(h.Sum(nil), bin[448:448+sha256.Size]) {
		return errors.New("LUKS2 header checksum does not match")
	}
	return nil
}

// volumeCipher returns the cipher and key size of the volume's first crypt
// segment, the key size being that of a key slot bound to the segment by a
// digest.
func (md luks2Metadata) volumeCipher() (string, int, error) {
	ids := make([]string, 0, len(md.Segments))
	for id := range md.Segments {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	for _, id := range ids {
		seg := md.Segments[id]
		if seg.Type != "crypt" || seg.Encryption == "" {
			continue
		}
		for _, d := range md.Digests {
			if !slices.Contains(d.Segments, id) {
				continue
			}
			for _, ks := range d.Keyslots {
				if k, ok := md.Keyslots[ks]; ok && k.KeySize > 0 && k.KeySize <= 1024 {
					return strings.TrimSpace(seg.Encryption), k.KeySize * 8, nil
				}
			}
		}
		return seg.Encryption, 0, fmt.Errorf("LUKS2 segment %s has no key slot with a key size", id)
	}
	return "", 0, errors.New("LUKS2 header has no crypt segment")
}

// keyslots tries the empty passphrase on every key slot of the header h
// read from r, a device of size bytes, and records them in p, with where
// the volume key came from.
func (h luksHeader) keyslots(r io.ReaderAt, size int64, p *facts.CryptParams, b *trialBudget) {
	vk := h.VolumeKey
	p.VolumeKey = &vk
	p.Tokens = slices.Clone(h.Tokens)
	var slots []facts.Keyslot
	var err error
	switch h.Version {
	case 1:
		slots, err = luks1Slots(r, size, h, b)
	case 2:
		slots, err = luks2Slots(r, size, h.json, b)
	default:
		err = fmt.Errorf("the key slots of a LUKS%d header are not tried", h.Version)
	}
	if err != nil {
		p.KeyslotsError = err.Error()
		return
	}
	p.Keyslots = slots
}
