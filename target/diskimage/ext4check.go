package diskimage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/gpuhost/gpuhost/internal/userfile"
)

// The superblock is checked here the way the kernel checks it at mount
// (ext4_fill_super), before go-diskfs sizes anything from it: go-diskfs
// divides by blocks per group and allocates the whole group descriptor
// table from two superblock fields, unchecked.

const (
	superblockOffset = 1024
	magicOffset      = superblockOffset + 0x38
	ext4Magic        = 0xEF53
	sectorSize       = 512

	incompatRecover    = 0x4
	incompat64Bit      = 0x80
	incompatMetaBG     = 0x10
	roCompatBigalloc   = 0x200
	ext4RootInode      = 2
	ext4GoodOldInode   = 128
	ext4MinDescSize64  = 64
	ext4MaxDescSize    = 1024
	ext4DirMode        = 0x4000
	ext4ModeTypeMask   = 0xF000
	ext4KnownIncompat  = 0x3E7D6 // the kernel's EXT4_FEATURE_INCOMPAT_SUPP
	ext4MaxGroupsBytes = 64 << 20
)

// ext4Super is what the check reads of a superblock.
type ext4Super struct {
	blockSize      int64
	blocks         uint64
	firstDataBlock uint64
	blocksPerGroup uint64
	inodesPerGroup uint64
	inodeSize      uint64
	descSize       uint64
	groups         uint64
	incompat       uint32
	uuid           string
	label          string
}

// isExt4 reports whether an ext4 (or ext2/3) magic lies where a filesystem
// starting at at would have it.
func isExt4(r io.ReaderAt, at int64) bool {
	b := make([]byte, 2)
	if _, err := r.ReadAt(b, at+magicOffset); err != nil {
		return false
	}
	return binary.LittleEndian.Uint16(b) == ext4Magic
}

// readExt4Super reads and checks the superblock of the filesystem at start,
// which has room bytes.
func readExt4Super(r io.ReaderAt, start, room int64) (*ext4Super, error) {
	sb := make([]byte, 1024)
	if _, err := r.ReadAt(sb, start+superblockOffset); err != nil {
		return nil, fmt.Errorf("reading the ext4 superblock: %w", err)
	}
	le := binary.LittleEndian
	if le.Uint16(sb[0x38:]) != ext4Magic {
		return nil, errors.New("no ext4 superblock")
	}
	logSize := le.Uint32(sb[0x18:])
	if logSize > 6 {
		return nil, fmt.Errorf("corrupt ext4 superblock: block size 2^%d KiB", logSize)
	}
	s := &ext4Super{
		blockSize:      1024 << logSize,
		blocks:         uint64(le.Uint32(sb[0x4:])),
		firstDataBlock: uint64(le.Uint32(sb[0x14:])),
		blocksPerGroup: uint64(le.Uint32(sb[0x20:])),
		inodesPerGroup: uint64(le.Uint32(sb[0x28:])),
		inodeSize:      ext4GoodOldInode,
		descSize:       32,
		incompat:       le.Uint32(sb[0x60:]),
		uuid:           formatUUID(sb[0x68:0x78]),
		label:          strings.TrimRight(string(sb[0x78:0x88]), "\x00"),
	}
	bs := uint64(s.blockSize)
	inodes := uint64(le.Uint32(sb[0x0:]))
	switch rev := le.Uint32(sb[0x4c:]); rev {
	case 0:
	case 1:
		s.inodeSize = uint64(le.Uint16(sb[0x58:]))
	default:
		return nil, fmt.Errorf("corrupt ext4 superblock: revision %d", rev)
	}
	if s.incompat&incompat64Bit != 0 {
		s.blocks |= uint64(le.Uint32(sb[0x150:])) << 32
		s.descSize = uint64(le.Uint16(sb[0xfe:]))
		if s.descSize < ext4MinDescSize64 || s.descSize > ext4MaxDescSize || s.descSize&(s.descSize-1) != 0 {
			return nil, fmt.Errorf("corrupt ext4 superblock: group descriptor size %d", s.descSize)
		}
	}
	if unknown := s.incompat &^ ext4KnownIncompat; unknown != 0 {
		return nil, fmt.Errorf("ext4 incompatible features 0x%x that Linux does not know; it would not mount the filesystem", unknown)
	}
	if s.incompat&incompatRecover != 0 {
		return nil, errors.New("the ext4 journal needs recovery (the filesystem was not unmounted cleanly): what a boot would see after replaying it cannot be read here; run e2fsck on the image")
	}
	switch {
	case s.inodeSize < ext4GoodOldInode || s.inodeSize&(s.inodeSize-1) != 0 || s.inodeSize > bs:
		return nil, fmt.Errorf("corrupt ext4 superblock: inode size %d", s.inodeSize)
	case s.blocks == 0 || s.firstDataBlock >= s.blocks:
		return nil, fmt.Errorf("corrupt ext4 superblock: first data block %d of %d blocks", s.firstDataBlock, s.blocks)
	case bs == 1024 && s.firstDataBlock == 0 && le.Uint32(sb[0x64:])&roCompatBigalloc == 0:
		return nil, errors.New("corrupt ext4 superblock: first data block 0 with 1 KiB blocks")
	case s.blocksPerGroup < 8 || (s.blocksPerGroup > 8*bs && le.Uint32(sb[0x64:])&roCompatBigalloc == 0):
		return nil, fmt.Errorf("corrupt ext4 superblock: %d blocks per group with %d-byte blocks", s.blocksPerGroup, bs)
	case s.inodesPerGroup < bs/s.inodeSize || s.inodesPerGroup > 8*bs:
		return nil, fmt.Errorf("corrupt ext4 superblock: %d inodes per group", s.inodesPerGroup)
	}
	if s.blocks > uint64(room)/bs {
		return nil, fmt.Errorf("truncated: the ext4 filesystem needs %d blocks of %d bytes, the disk holds %d bytes", s.blocks, bs, room)
	}
	s.groups = (s.blocks - s.firstDataBlock + s.blocksPerGroup - 1) / s.blocksPerGroup
	if inodes != s.groups*s.inodesPerGroup {
		return nil, fmt.Errorf("corrupt ext4 superblock: %d inodes, but %d groups of %d", inodes, s.groups, s.inodesPerGroup)
	}
	if gdt := s.groups * s.descSize; gdt > ext4MaxGroupsBytes {
		return nil, fmt.Errorf("%w: the ext4 group descriptor table of %d bytes exceeds %d", ErrLimit, gdt, ext4MaxGroupsBytes)
	}
	return s, nil
}

func formatUUID(b []byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// checkExt4Layout checks where each group descriptor places its bitmaps
// and inode table, as the kernel does at mount (ext4_check_descriptors),
// and that the root inode is a directory. With meta_bg the descriptors
// after the first block are spread over the disk; only the first is read.
func checkExt4Layout(r io.ReaderAt, start int64, s *ext4Super) error {
	bs := s.blockSize
	gdtBlock := s.firstDataBlock + 1
	groups := s.groups
	if s.incompat&incompatMetaBG != 0 {
		groups = min(groups, uint64(bs)/s.descSize)
	}
	inodeTableBlocks := (s.inodesPerGroup*s.inodeSize + uint64(bs) - 1) / uint64(bs)
	buf := make([]byte, bs)
	var rootTable uint64
	for g := uint64(0); g < groups; g++ {
		at := g * s.descSize
		if at%uint64(bs) == 0 {
			if _, err := r.ReadAt(buf, start+int64(gdtBlock)*bs+int64(at)); err != nil {
				return fmt.Errorf("reading the ext4 group descriptors: %w", err)
			}
		}
		d := buf[at%uint64(bs):][:s.descSize]
		block, inode, table := groupBlocks(d, s)
		for _, f := range []struct {
			what   string
			at, n  uint64
			unused bool
		}{{"block bitmap", block, 1, false}, {"inode bitmap", inode, 1, false}, {"inode table", table, inodeTableBlocks, false}} {
			if f.at < s.firstDataBlock || f.at >= s.blocks || f.n > s.blocks-f.at {
				return fmt.Errorf("corrupt ext4 filesystem: the %s of group %d at block %d lies outside the filesystem's %d blocks", f.what, g, f.at, s.blocks)
			}
		}
		if g == 0 {
			rootTable = table
		}
	}
	ino := make([]byte, 2)
	off := start + int64(rootTable)*bs + (ext4RootInode-1)*int64(s.inodeSize)
	if _, err := r.ReadAt(ino, off); err != nil {
		return fmt.Errorf("reading the ext4 root inode: %w", err)
	}
	if mode := binary.LittleEndian.Uint16(ino); mode&ext4ModeTypeMask != ext4DirMode {
		return fmt.Errorf("corrupt ext4 filesystem: the root inode (2) is not a directory (mode 0%o)", mode)
	}
	return nil
}

// groupBlocks returns where a group descriptor puts the block bitmap, the
// inode bitmap and the inode table.
func groupBlocks(d []byte, s *ext4Super) (block, inode, table uint64) {
	le := binary.LittleEndian
	block, inode, table = uint64(le.Uint32(d[0:])), uint64(le.Uint32(d[4:])), uint64(le.Uint32(d[8:]))
	if s.incompat&incompat64Bit != 0 && s.descSize >= 64 {
		block |= uint64(le.Uint32(d[0x20:])) << 32
		inode |= uint64(le.Uint32(d[0x24:])) << 32
		table |= uint64(le.Uint32(d[0x28:])) << 32
	}
	return block, inode, table
}

// inodeModes reads inodes' modes from the disk, where go-diskfs reads the
// inodes themselves: it takes every group descriptor from one table right
// after the superblock, as the kernel does without meta_bg.
type inodeModes struct {
	r     io.ReaderAt
	start int64
	s     *ext4Super
	// The entries of a directory mostly share a group: the last one's
	// inode table is kept.
	group, table uint64
	known        bool
}

// mode is the i_mode of inode ino.
func (m *inodeModes) mode(ino uint32) (uint16, error) {
	at, err := m.locate(ino)
	if err != nil {
		return 0, err
	}
	b := make([]byte, 2)
	if _, err := m.r.ReadAt(b, at); err != nil {
		return 0, fmt.Errorf("reading inode %d: %w", ino, err)
	}
	return binary.LittleEndian.Uint16(b), nil
}

// locate is where on the disk inode ino lies.
func (m *inodeModes) locate(ino uint32) (int64, error) {
	s := m.s
	if ino == 0 || uint64(ino) > s.groups*s.inodesPerGroup {
		return 0, fmt.Errorf("inode %d outside the filesystem's %d", ino, s.groups*s.inodesPerGroup)
	}
	group, index := uint64(ino-1)/s.inodesPerGroup, uint64(ino-1)%s.inodesPerGroup
	bs := uint64(s.blockSize)
	if !m.known || m.group != group {
		gdt := (superblockOffset/bs + 1) * bs
		d := make([]byte, s.descSize)
		if _, err := m.r.ReadAt(d, m.start+int64(gdt+group*s.descSize)); err != nil {
			return 0, fmt.Errorf("reading the group descriptor of inode %d: %w", ino, err)
		}
		_, _, m.table = groupBlocks(d, s)
		m.group, m.known = group, true
	}
	return m.start + int64(m.table*bs+index*s.inodeSize), nil
}

// ext4Types are the file types an inode's mode may hold, as fs.FileMode
// has them.
var ext4Types = map[uint16]fs.FileMode{
	0x1000: fs.ModeNamedPipe,
	0x2000: fs.ModeDevice | fs.ModeCharDevice,
	0x4000: fs.ModeDir,
	0x6000: fs.ModeDevice,
	0x8000: 0,
	0xA000: fs.ModeSymlink,
	0xC000: fs.ModeSocket,
}

// check holds inode ino to dirent, the type its directory entry gives
// (go-diskfs gives an entry of unknown type as a regular file). go-diskfs
// walks directories by their entries' types and reads each inode by its
// own, so an inode that says otherwise, which the kernel would follow and
// e2fsck repair, would be read as what it is not.
func (m *inodeModes) check(ino uint32, dirent fs.FileMode) error {
	mode, err := m.mode(ino)
	if err != nil {
		return err
	}
	t, ok := ext4Types[mode&ext4ModeTypeMask]
	switch {
	case !ok:
		return fmt.Errorf("inode %d has mode 0%o, of no file type", ino, mode)
	case t != dirent.Type():
		return fmt.Errorf("its directory entry says %s, but inode %d is %s (mode 0%o)", userfile.Kind(dirent.Type()), ino, userfile.Kind(t), mode)
	}
	return nil
}
