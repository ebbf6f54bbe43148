package diskimage

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// TestRootInodeNotADirectory: the kernel refuses to mount a filesystem
// whose root inode is not a directory; so does Open.
func TestRootInodeNotADirectory(t *testing.T) {
	debugfs := testutil.Tool(t, "debugfs", "e2fsprogs")
	for _, flags := range [][]string{nil, {"-b", "1024"}} {
		raw := ext4Of(t, osTree(t, "weak", nil), "8M", flags...)
		testutil.Run(t, time.Minute, debugfs, "-w", "-R", "sif <2> mode 0100644", raw)
		mustFail(t, Options{}, raw, "the root inode (2) is not a directory (mode 0100644)")
		mustFail(t, Options{}, convert(t, raw), "the root inode (2) is not a directory")
	}
}

// TestExt4Superblock patches superblock fields, each past what the kernel
// accepts. The check runs before go-diskfs verifies the superblock's
// checksum, so its own error is the one seen.
func TestExt4Superblock(t *testing.T) {
	raw := ext4Of(t, osTree(t, "weak", nil), "8M", "-b", "4096")
	mustRead(t, Options{}, raw, "weak")
	sb := readFile(t, raw)[1024:2048]
	le := binary.LittleEndian
	u32 := func(off int, v uint32) map[int64][]byte {
		return map[int64][]byte{int64(1024 + off): le.AppendUint32(nil, v)}
	}
	u16 := func(off int, v uint16) map[int64][]byte {
		return map[int64][]byte{int64(1024 + off): le.AppendUint16(nil, v)}
	}
	blocks, ipg, bpg := le.Uint32(sb[4:]), le.Uint32(sb[0x28:]), le.Uint32(sb[0x20:])
	for name, c := range map[string]struct {
		patch map[int64][]byte
		err   string
	}{
		"block size":          {u32(0x18, 7), "block size 2^7 KiB"},
		"blocks past the end": {u32(4, blocks+1), "truncated: the ext4 filesystem needs"},
		"blocks per group 0":  {u32(0x20, 0), "0 blocks per group"},
		"blocks per group":    {u32(0x20, 8*4096+1), "32769 blocks per group"},
		"inodes per group":    {u32(0x28, 8*4096+1), "inodes per group"},
		"inodes count":        {u32(0, ipg*((blocks+bpg-1)/bpg)+1), "inodes, but"},
		"inode size":          {u16(0x58, 100), "inode size 100"},
		"inode size odd":      {u16(0x58, 384), "inode size 384"},
		"revision":            {u32(0x4c, 2), "revision 2"},
		"unknown incompat":    {u32(0x60, le.Uint32(sb[0x60:])|0x1000), "incompatible features 0x1000"},
		"needs recovery":      {u32(0x60, le.Uint32(sb[0x60:])|incompatRecover), "journal needs recovery"},
		"first data block":    {u32(0x14, blocks), "first data block"},
	} {
		t.Run(name, func(t *testing.T) { mustFail(t, Options{}, patched(t, raw, c.patch), c.err) })
	}
	// At the limits: 8 × block size blocks per group is what mkfs uses.
	if bpg != 8*4096 {
		t.Errorf("mkfs wrote %d blocks per group", bpg)
	}
}

// TestGroupDescriptors: a group whose inode table lies outside the
// filesystem is refused, as the kernel does at mount.
func TestGroupDescriptors(t *testing.T) {
	raw := ext4Of(t, osTree(t, "weak", nil), "8M", "-O", "^64bit", "-b", "4096")
	// The table follows the superblock, in block 1; the inode table of
	// group 0 is its third word.
	mustFail(t, Options{}, patched(t, raw, map[int64][]byte{4096 + 8: binary.LittleEndian.AppendUint32(nil, 1<<30)}), "the inode table of group 0 at block 1073741824 lies outside")
}
