package diskimage

import (
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sort"

	"github.com/diskfs/go-diskfs/filesystem/ext4"
)

// go-diskfs reads a file's extents as if they lay end to end from the
// file's start: a file with holes reads shifted bytes, or panics. Holes are
// common: mkfs.ext4 -d leaves one for every all-zero block it copies, and
// kernels, boot loaders and modules have such blocks. So regular files
// that keep an extent tree are read here from that tree, a hole or an
// unwritten extent as zeros, as the kernel reads them.

const (
	inodeFlagsOffset = 0x20
	inodeBlockOffset = 0x28
	inodeSizeHigh    = 0x6c
	inodeFlagExtents = 0x80000
	inodeFlagInline  = 0x10000000
	extentMagic      = 0xf30a
	// maxExtentDepth is the deepest tree the kernel builds (ext4_ext_check).
	maxExtentDepth = 5
	// maxFileExtents bounds the extents read for one file.
	maxFileExtents = 1 << 18
	// unwrittenLength marks, added to a length, an extent allocated but
	// not written, which reads as zeros.
	unwrittenLength = 32768
)

// extent maps length blocks of a file from its logical block onto the
// disk from physical.
type extent struct {
	logical, length, physical uint64
	unwritten                 bool
}

// inode reads inode ino whole.
func (m *inodeModes) inode(ino uint32) ([]byte, error) {
	at, err := m.locate(ino)
	if err != nil {
		return nil, err
	}
	b := make([]byte, m.s.inodeSize)
	if _, err := m.r.ReadAt(b, at); err != nil {
		return nil, fmt.Errorf("reading inode %d: %w", ino, err)
	}
	return b, nil
}

// extentsOf reads the extent tree of inode ino and its size. ok is false
// for an inode that keeps none (inline data, or the block map of ext2 and
// ext3), which go-diskfs reads itself.
func (m *inodeModes) extentsOf(ino uint32) (ext []extent, size int64, ok bool, err error) {
	in, err := m.inode(ino)
	if err != nil {
		return nil, 0, false, err
	}
	le := binary.LittleEndian
	flags := le.Uint32(in[inodeFlagsOffset:])
	if flags&inodeFlagExtents == 0 || flags&inodeFlagInline != 0 {
		return nil, 0, false, nil
	}
	size = int64(uint64(le.Uint32(in[0x4:])) | uint64(le.Uint32(in[inodeSizeHigh:]))<<32)
	if size < 0 {
		return nil, 0, false, fmt.Errorf("inode %d: size %d", ino, size)
	}
	w := extentWalk{m: m, ino: ino}
	if err := w.node(in[inodeBlockOffset:inodeBlockOffset+60], -1); err != nil {
		return nil, 0, false, err
	}
	slices.SortFunc(w.out, func(a, b extent) int { return cmpUint(a.logical, b.logical) })
	for i := 1; i < len(w.out); i++ {
		if prev := w.out[i-1]; prev.logical+prev.length > w.out[i].logical {
			return nil, 0, false, fmt.Errorf("inode %d: extents at blocks %d and %d overlap", ino, prev.logical, w.out[i].logical)
		}
	}
	return w.out, size, true, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// extentWalk gathers the leaves of one inode's extent tree.
type extentWalk struct {
	m   *inodeModes
	ino uint32
	out []extent
}

// node reads a tree node: a header, then index entries leading to the
// nodes below or, at depth 0, the extents. want is the depth the parent
// expects, -1 at the root.
func (w *extentWalk) node(b []byte, want int) error {
	le := binary.LittleEndian
	if len(b) < 12 || le.Uint16(b) != extentMagic {
		return fmt.Errorf("inode %d: no extent header", w.ino)
	}
	entries, depth := int(le.Uint16(b[2:])), int(le.Uint16(b[6:]))
	switch {
	case depth > maxExtentDepth || (want >= 0 && depth != want):
		// Depth falls by one at each level, so a tree that points back
		// at itself ends here.
		return fmt.Errorf("inode %d: an extent tree node of depth %d where %d was due", w.ino, depth, want)
	case 12+12*entries > len(b):
		return fmt.Errorf("inode %d: %d extent entries in a node of %d bytes", w.ino, entries, len(b))
	}
	bs := uint64(w.m.s.blockSize)
	for i := range entries {
		e := b[12+12*i:]
		if depth == 0 {
			if len(w.out) >= maxFileExtents {
				return fmt.Errorf("inode %d: %w: more than %d extents", w.ino, ErrLimit, maxFileExtents)
			}
			x := extent{logical: uint64(le.Uint32(e)), length: uint64(le.Uint16(e[4:])), physical: uint64(le.Uint16(e[6:]))<<32 | uint64(le.Uint32(e[8:]))}
			if x.length > unwrittenLength {
				x.length, x.unwritten = x.length-unwrittenLength, true
			}
			if x.physical+x.length > w.m.s.blocks {
				return fmt.Errorf("inode %d: an extent at block %d runs past the filesystem's %d blocks", w.ino, x.physical, w.m.s.blocks)
			}
			w.out = append(w.out, x)
			continue
		}
		leaf := uint64(le.Uint16(e[8:]))<<32 | uint64(le.Uint32(e[4:]))
		if leaf >= w.m.s.blocks {
			return fmt.Errorf("inode %d: an extent index points at block %d of %d", w.ino, leaf, w.m.s.blocks)
		}
		child := make([]byte, bs)
		if _, err := w.m.r.ReadAt(child, w.m.start+int64(leaf*bs)); err != nil {
			return fmt.Errorf("inode %d: reading extent tree block %d: %w", w.ino, leaf, err)
		}
		if err := w.node(child, depth-1); err != nil {
			return err
		}
	}
	return nil
}

// extentFile reads a regular file by its extents.
type extentFile struct {
	r         io.ReaderAt
	start, bs int64
	size, off int64
	ext       []extent
	info      fs.FileInfo
}

func (f *extentFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *extentFile) Close() error               { return nil }

func (f *extentFile) Read(p []byte) (int, error) {
	if f.off >= f.size {
		return 0, io.EOF
	}
	if int64(len(p)) > f.size-f.off {
		p = p[:f.size-f.off]
	}
	blk := uint64(f.off / f.bs)
	i := sort.Search(len(f.ext), func(i int) bool { return f.ext[i].logical+f.ext[i].length > blk })
	var n int
	switch {
	case i < len(f.ext) && f.ext[i].logical <= blk && !f.ext[i].unwritten:
		x := f.ext[i]
		end := int64(x.logical+x.length) * f.bs
		p = p[:min(int64(len(p)), end-f.off)]
		at := f.start + int64(x.physical+blk-x.logical)*f.bs + f.off%f.bs
		var err error
		if n, err = f.r.ReadAt(p, at); err != nil && n < len(p) {
			return n, fmt.Errorf("reading at %d: %w", at, err)
		}
	default:
		// A hole, up to the next extent, or an unwritten extent.
		end := f.size
		if i < len(f.ext) {
			x := f.ext[i]
			end = min(end, int64(x.logical)*f.bs)
			if x.logical <= blk {
				end = min(f.size, int64(x.logical+x.length)*f.bs)
			}
		}
		p = p[:min(int64(len(p)), end-f.off)]
		clear(p)
		n = len(p)
	}
	f.off += int64(n)
	return n, nil
}

// openExtents opens the regular file name, whose stat is info, by its
// extent tree; nil when go-diskfs is to read it.
func (v *ext4View) openExtents(name string, info fs.FileInfo) (fs.File, error) {
	st, ok := info.Sys().(*ext4.StatT)
	if !ok || !info.Mode().IsRegular() || v.modes == nil {
		return nil, nil
	}
	ext, size, ok, err := v.modes.extentsOf(st.Ino)
	if err != nil {
		return nil, fmt.Errorf("corrupt filesystem: %w", err)
	}
	if !ok {
		return nil, nil
	}
	if size != info.Size() {
		return nil, fmt.Errorf("corrupt filesystem: inode %d holds %d bytes, its listing says %d", st.Ino, size, info.Size())
	}
	return &extentFile{r: v.modes.r, start: v.modes.start, bs: v.modes.s.blockSize, size: size, ext: ext, info: info}, nil
}
