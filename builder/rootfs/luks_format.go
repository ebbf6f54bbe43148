package rootfs

import (
	"context"
	"crypto/aes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/internal/devmapper"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"golang.org/x/crypto/xts"
	"golang.org/x/sys/unix"
)

// luksSegment is where a LUKS2 header puts the encrypted data, read from
// its JSON area.
type luksSegment struct {
	Offset     int64
	Encryption string
	SectorSize int
	// Digest is the header's digest of the volume key that opens the
	// segment, as the JSON area holds it.
	Digest luksDigest
}

// luksDigest is a LUKS2 digest of a volume key (PBKDF2 of the key with
// its salt), which identifies the key without revealing it.
type luksDigest struct {
	Salt   string `json:"salt"`
	Digest string `json:"digest"`
}

// readLUKSSegment reads segment 0 of the LUKS2 header at the start of r.
func readLUKSSegment(r io.ReaderAt) (luksSegment, error) {
	bin := make([]byte, 4096)
	if _, err := r.ReadAt(bin, 0); err != nil {
		return luksSegment{}, fmt.Errorf("reading the LUKS2 header: %w", err)
	}
	if string(bin[:6]) != "LUKS\xba\xbe" || binary.BigEndian.Uint16(bin[6:8]) != 2 {
		return luksSegment{}, errors.New("no LUKS2 header")
	}
	size := binary.BigEndian.Uint64(bin[8:16])
	if size < 16<<10 || size > 4<<20 {
		return luksSegment{}, fmt.Errorf("LUKS2 header size %d", size)
	}
	area := make([]byte, size-4096)
	if _, err := r.ReadAt(area, 4096); err != nil {
		return luksSegment{}, fmt.Errorf("reading the LUKS2 JSON area: %w", err)
	}
	if i := strings.IndexByte(string(area), 0); i >= 0 {
		area = area[:i]
	}
	var md struct {
		Segments map[string]struct {
			Type       string `json:"type"`
			Offset     string `json:"offset"`
			IVTweak    string `json:"iv_tweak"`
			Encryption string `json:"encryption"`
			SectorSize int    `json:"sector_size"`
		} `json:"segments"`
		Digests map[string]struct {
			luksDigest
			Segments []string `json:"segments"`
		} `json:"digests"`
	}
	if err := json.Unmarshal(area, &md); err != nil {
		return luksSegment{}, fmt.Errorf("the LUKS2 JSON area: %w", err)
	}
	seg, ok := md.Segments["0"]
	if !ok || seg.Type != "crypt" {
		return luksSegment{}, errors.New("the LUKS2 header has no crypt segment 0")
	}
	off, err := strconv.ParseInt(seg.Offset, 10, 64)
	if err != nil || off <= 0 || off%512 != 0 {
		return luksSegment{}, fmt.Errorf("LUKS2 segment 0 offset %q", seg.Offset)
	}
	if seg.IVTweak != "0" {
		return luksSegment{}, fmt.Errorf("LUKS2 segment 0 iv_tweak %q; this writer numbers sectors from 0", seg.IVTweak)
	}
	var digest luksDigest
	for _, d := range md.Digests {
		if slices.Contains(d.Segments, "0") {
			if digest.Digest != "" {
				return luksSegment{}, errors.New("the LUKS2 header has two digests for segment 0")
			}
			digest = d.luksDigest
		}
	}
	if digest.Salt == "" || digest.Digest == "" {
		return luksSegment{}, errors.New("the LUKS2 header has no digest of segment 0's key")
	}
	return luksSegment{Offset: off, Encryption: seg.Encryption, SectorSize: seg.SectorSize, Digest: digest}, nil
}

// imageKeyToken is the LUKS2 token that records which volume key the
// image was built with: the header's own digest of it. Once first boot has
// re-encrypted the volume the header holds another digest, so a scan of the
// booted host tells (GH-ENC-005) whether the host still shares its key
// with every other host of the image. cryptsetup and systemd-cryptsetup
// skip a token of a type they have no handler for, and a re-encryption
// keeps the tokens bound to no key slot.
func imageKeyToken(d luksDigest) ([]byte, error) {
	return json.Marshal(struct {
		Type     string   `json:"type"`
		Keyslots []string `json:"keyslots"`
		luksDigest
	}{imageKeyTokenType, []string{}, d})
}

// imageKeyTokenType is the token's type, which the scanner looks for.
const imageKeyTokenType = "gpuhost-image-key"

// formatLUKS writes the LUKS2 header of a partition of partBytes into
// header (a sparse file the size of the partition, which luksFormat needs
// to see) and returns the volume key and the data segment.
func formatLUKS(ctx context.Context, r *luksRoot, dir, header string, partBytes int64, ui packersdk.Ui) ([]byte, luksSegment, error) {
	vk := make([]byte, luksKeyBits/8)
	if _, err := rand.Read(vk); err != nil {
		return nil, luksSegment{}, err
	}
	vkFile, keyFile := filepath.Join(dir, "luks-volume.key.tmp"), filepath.Join(dir, "luks-provision.key.tmp")
	defer os.Remove(vkFile)
	defer os.Remove(keyFile)
	// The empty passphrase: an empty key file.
	for f, b := range map[string][]byte{vkFile: vk, keyFile: nil} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return nil, luksSegment{}, err
		}
	}
	if err := createSparse(header, partBytes); err != nil {
		return nil, luksSegment{}, err
	}
	defer devmapper.Keep()()
	sector := luksSectorSize(partBytes)
	cmd := exec.CommandContext(ctx, "cryptsetup", luksFormatArgs(r, sector, vkFile, keyFile, header)...)
	if err := runStreaming(cmd, ui); err != nil {
		return nil, luksSegment{}, fmt.Errorf("cryptsetup luksFormat %s: %w", header, err)
	}
	f, err := os.Open(header)
	if err != nil {
		return nil, luksSegment{}, err
	}
	defer f.Close()
	seg, err := readLUKSSegment(f)
	if err != nil {
		return nil, luksSegment{}, fmt.Errorf("%s: %w", header, err)
	}
	if seg.Encryption != luksCipher || seg.SectorSize != sector {
		return nil, luksSegment{}, fmt.Errorf("%s: cryptsetup made segment 0 %s with %d-byte sectors, not %s with %d", header, seg.Encryption, seg.SectorSize, luksCipher, sector)
	}
	if seg.Offset >= partBytes {
		return nil, luksSegment{}, fmt.Errorf("%s: the LUKS2 data segment starts at byte %d, past the %d-byte partition", header, seg.Offset, partBytes)
	}
	tok, err := imageKeyToken(seg.Digest)
	if err != nil {
		return nil, luksSegment{}, err
	}
	tokFile := filepath.Join(dir, "luks-token.json.tmp")
	defer os.Remove(tokFile)
	if err := os.WriteFile(tokFile, tok, 0o600); err != nil {
		return nil, luksSegment{}, err
	}
	cmd = exec.CommandContext(ctx, "cryptsetup", "token", "import", "--json-file", tokFile, header)
	if err := runStreaming(cmd, ui); err != nil {
		return nil, luksSegment{}, fmt.Errorf("cryptsetup token import %s: %w", header, err)
	}
	return vk, seg, nil
}

// encryptExtents encrypts the data extents of the plain file src with
// AES-XTS (key: the 512-bit volume key) and writes them into dst at offset,
// each sector of src (of sector bytes) under the plain64 IV of its first
// 512-byte unit: dm-crypt counts IVs in 512-byte units whatever the sector
// size, unless told iv_large_sectors, which cryptsetup sets only for plain
// mappings. Holes of src are left as they are in dst.
func encryptExtents(ctx context.Context, dst *os.File, offset int64, src *os.File, key []byte, sector int64) error {
	c, err := xts.NewCipher(aes.NewCipher, key)
	if err != nil {
		return err
	}
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if size%sector != 0 {
		return fmt.Errorf("%s is %d bytes, not whole %d-byte sectors", src.Name(), size, sector)
	}
	buf := make([]byte, 1<<20)
	fd := int(src.Fd())
	for pos := int64(0); pos < size; {
		start, err := unix.Seek(fd, pos, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return nil // no data after pos
		}
		if err != nil {
			return fmt.Errorf("finding the data of %s: %w", src.Name(), err)
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			return fmt.Errorf("finding the holes of %s: %w", src.Name(), err)
		}
		// Extents are file system blocks; whole sectors either way.
		start -= start % sector
		if r := end % sector; r != 0 {
			end += sector - r
		}
		end = min(end, size)
		for at := start; at < end; {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := min(int64(len(buf)), end-at)
			chunk := buf[:n]
			if _, err := src.ReadAt(chunk, at); err != nil {
				return fmt.Errorf("reading %s: %w", src.Name(), err)
			}
			for s := int64(0); s < n; s += sector {
				sec := chunk[s : s+sector]
				c.Encrypt(sec, sec, uint64((at+s)/512))
			}
			if _, err := dst.WriteAt(chunk, offset+at); err != nil {
				return fmt.Errorf("writing %s: %w", dst.Name(), err)
			}
			at += n
		}
		pos = end
	}
	return nil
}

// writeLUKSRoot writes the encrypted root partition into the disk raw at
// partStart (bytes), partBytes long, from the rootfs tree (its /boot
// excluded: see writeDiskFilesystems).
func writeLUKSRoot(ctx context.Context, r *luksRoot, work, raw, rootTree, fsUUID string, partStart, partBytes int64, ui packersdk.Ui) error {
	header := filepath.Join(work, "luks-header.tmp")
	plain := filepath.Join(work, "root.ext4.tmp")
	defer os.Remove(header)
	defer os.Remove(plain)
	vk, seg, err := formatLUKS(ctx, r, work, header, partBytes, ui)
	if err != nil {
		return err
	}
	defer clear(vk)
	// Only the header area is copied: the rest of the file is a hole.
	if err := copyHead(raw, header, partStart, seg.Offset); err != nil {
		return fmt.Errorf("writing the LUKS2 header: %w", err)
	}
	os.Remove(header)
	dataBytes := partBytes - seg.Offset
	if err := createSparse(plain, dataBytes); err != nil {
		return err
	}
	args := []string{"-q", "-F", "-L", "root", "-U", fsUUID}
	if seg.SectorSize > 1024 {
		// No file system block smaller than an encryption sector.
		args = append(args, "-b", strconv.Itoa(seg.SectorSize))
	}
	args = append(args, "-E", "lazy_itable_init=1,lazy_journal_init=1", "-d", rootTree, plain, fmt.Sprintf("%dk", dataBytes/1024))
	cmd := exec.CommandContext(ctx, "mkfs.ext4", args...)
	if err := runStreaming(cmd, ui); err != nil {
		return fmt.Errorf("mkfs.ext4 of the root file system: %w", err)
	}
	src, err := os.Open(plain)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(raw, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := encryptExtents(ctx, dst, partStart+seg.Offset, src, vk, int64(seg.SectorSize)); err != nil {
		dst.Close()
		return fmt.Errorf("encrypting the root file system: %w", err)
	}
	return dst.Close()
}

// copyHead copies the first n bytes of src into dst at offset.
func copyHead(dst, src string, offset, n int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.NewOffsetWriter(out, offset), io.LimitReader(in, n)); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
