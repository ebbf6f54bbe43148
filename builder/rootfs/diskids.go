package rootfs

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// diskIDs draws the identifiers of one disk: its GPT's GUIDs, its file
// systems' UUIDs and volume id, and its LUKS2 header's UUID. With no seed
// each is random. With a seed (disk_id_seed) each is derived from it and
// the identifier's label, the way systemd-repart's --seed does, so that
// two bakes of one lock name their partitions alike and their trees
// (fstab, crypttab, GRUB's configuration, the initramfs) are the same file
// for file. The volume key of an encrypted root is never derived.
type diskIDs struct {
	seed []byte
}

// bytes returns n bytes for label: HMAC-SHA256 of label under the seed,
// or random ones.
func (d diskIDs) bytes(label string, n int) ([]byte, error) {
	if len(d.seed) == 0 {
		b := make([]byte, n)
		if _, err := rand.Read(b); err != nil {
			return nil, fmt.Errorf("drawing the disk's %s: %w", label, err)
		}
		return b, nil
	}
	m := hmac.New(sha256.New, d.seed)
	m.Write([]byte("gpuhost-rootfs disk id: " + label))
	return m.Sum(nil)[:n], nil
}

// uuid returns a version 4 UUID for label.
func (d diskIDs) uuid(label string) (string, error) {
	b, err := d.bytes(label, 16)
	if err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

// volumeID returns a FAT volume id for label as eight hex digits.
func (d diskIDs) volumeID(label string) (string, error) {
	b, err := d.bytes(label, 4)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%08X", binary.BigEndian.Uint32(b)), nil
}

// uuids sets each of ids to the UUID of its label.
func (d diskIDs) uuids(ids map[string]*string) error {
	for label, p := range ids {
		u, err := d.uuid(label)
		if err != nil {
			return err
		}
		*p = u
	}
	return nil
}

// diskIDs draws this build's disk identifiers.
func (c *Config) diskIDs() diskIDs {
	if c.DiskIDSeed == "" {
		return diskIDs{}
	}
	return diskIDs{seed: []byte(c.DiskIDSeed)}
}
