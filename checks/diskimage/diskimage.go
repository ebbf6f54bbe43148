// Package diskimage reads the root filesystem of a disk image without
// mounting it: no root, no loop device. It reads raw and qcow2 images holding
// ext4, on the whole disk or in a GPT or MBR partition, and exposes the
// filesystem as a sysroot.FS, with the guarantees a rootfs directory has.
package diskimage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/diskfs/go-diskfs/filesystem/ext4"
	"github.com/diskfs/go-diskfs/partition"
	"github.com/lima-vm/go-qcow2reader"

	"github.com/gpuhost/gpuhost/checks/sysroot"
)

// qcow2Magic opens every qcow2 file.
var qcow2Magic = []byte{'Q', 'F', 'I', 0xfb}

const (
	// ext4 puts its superblock 1024 bytes into the filesystem, and its magic
	// 56 bytes into that.
	superblockOffset = 1024
	magicOffset      = superblockOffset + 0x38
	ext4Magic        = 0xEF53
	sectorSize       = 512
)

// ErrNoFilesystem is returned when an image holds no ext4 filesystem that
// this package can find.
var ErrNoFilesystem = errors.New("no ext4 filesystem found")

// Image is an open disk image.
type Image struct {
	file   string
	f      *os.File
	closer io.Closer
	disk   *checkedReader
	view   *ext4View
	fsys   sysroot.FS
	// Format is "raw" or "qcow2".
	Format string
	// Offset is where the filesystem starts in the disk, in bytes.
	Offset int64
}

// Open opens file, a raw or qcow2 disk image, and finds its ext4 root
// filesystem. A file that is neither, or is cut short, or corrupt, is an
// error naming file. The caller closes the Image.
func Open(file string) (*Image, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("opening image: %w", err)
	}
	img, err := open(file, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return img, nil
}

func open(file string, f *os.File) (img *Image, err error) {
	// The libraries below parse what the image says; a crafted image must
	// give an error, never take the process down.
	defer func() {
		if p := recover(); p != nil {
			img, err = nil, fmt.Errorf("reading image %s: corrupt image (%v)", file, p)
		}
	}()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading image %s: %w", file, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("reading image %s: not a regular file", file)
	}
	head := make([]byte, 4)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, fmt.Errorf("reading image %s: too short to be a disk image: %w", file, err)
	}
	im := &Image{file: file, f: f, Format: "raw"}
	var ra io.ReaderAt = f
	size := info.Size()
	if bytes.Equal(head, qcow2Magic) {
		q, err := qcow2reader.Open(f)
		if err != nil {
			return nil, fmt.Errorf("reading qcow2 image %s: %w", file, err)
		}
		if err := q.Readable(); err != nil {
			q.Close()
			return nil, fmt.Errorf("reading qcow2 image %s: %w", file, err)
		}
		im.Format, im.closer, ra, size = "qcow2", q, q, q.Size()
		if size <= 0 {
			q.Close()
			return nil, fmt.Errorf("reading qcow2 image %s: no virtual size", file)
		}
	}
	im.disk = &checkedReader{ra: ra, size: size}
	start, fsSize, err := findExt4(im.disk, size)
	if err != nil {
		im.closeInner()
		return nil, fmt.Errorf("reading image %s: %w", file, err)
	}
	if err := checkExtent(im.disk, start, fsSize); err != nil {
		im.closeInner()
		return nil, fmt.Errorf("reading image %s: %w", file, err)
	}
	b := &budget{}
	efs, err := ext4.Read(&storage{ra: &budgeted{ra: im.disk, b: b}, size: size}, fsSize, start, sectorSize)
	if err != nil {
		im.closeInner()
		return nil, fmt.Errorf("reading ext4 filesystem of image %s (at byte %d): %w", file, start, err)
	}
	if err := im.disk.Err(); err != nil {
		im.closeInner()
		return nil, fmt.Errorf("reading image %s: %w", file, err)
	}
	im.Offset = start
	im.view = &ext4View{fs: efs, budget: b}
	im.fsys = sysroot.FromFS(im.view, file)
	return im, nil
}

// FS is the image's root filesystem.
func (im *Image) FS() sysroot.FS { return im.fsys }

// Err reports the first damage met so far: a read of the disk that failed
// inside its bounds (a qcow2 cut short, a cluster pointing past the file's
// end), or a file the filesystem lists but that cannot be read (a corrupt
// inode or extent tree). Collectors see such failures as errors on single
// files; a scan checks Err afterwards so that a damaged image fails as a
// whole. Absent files, oversized files and link loops are not damage.
func (im *Image) Err() error {
	if err := im.disk.Err(); err != nil {
		return fmt.Errorf("reading image %s: %w", im.file, err)
	}
	if err := im.view.Err(); err != nil {
		return fmt.Errorf("reading image %s: corrupt filesystem: %w", im.file, err)
	}
	return nil
}

// Close releases the image file.
func (im *Image) Close() error {
	im.closeInner()
	return im.f.Close()
}

func (im *Image) closeInner() {
	if im.closer != nil {
		im.closer.Close()
		im.closer = nil
	}
}

// findExt4 returns where the ext4 filesystem lies: the whole disk when it
// starts with one, else the largest ext4 partition of a GPT or MBR table.
func findExt4(ra io.ReaderAt, size int64) (start, length int64, err error) {
	if isExt4(ra, 0) {
		return 0, size, nil
	}
	table, err := partition.Read(&storage{ra: ra, size: size}, sectorSize, sectorSize)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: no ext4 superblock at the start and no partition table (%v)", ErrNoFilesystem, err)
	}
	for _, p := range table.GetPartitions() {
		if p == nil {
			continue
		}
		s, l := p.GetStart(), p.GetSize()
		if s <= 0 || l <= 0 || s >= size || l > size-s {
			continue
		}
		if l > length && isExt4(ra, s) {
			start, length = s, l
		}
	}
	if length == 0 {
		return 0, 0, fmt.Errorf("%w in any partition of the %s table", ErrNoFilesystem, table.Type())
	}
	return start, length, nil
}

func isExt4(ra io.ReaderAt, at int64) bool {
	b := make([]byte, 2)
	if _, err := ra.ReadAt(b, at+magicOffset); err != nil {
		return false
	}
	return binary.LittleEndian.Uint16(b) == ext4Magic
}

// checkExtent refuses a filesystem larger than the room it has: a raw image
// cut short, whose missing blocks would otherwise read as errors one file at
// a time.
func checkExtent(ra io.ReaderAt, start, room int64) error {
	sb := make([]byte, 1024)
	if _, err := ra.ReadAt(sb, start+superblockOffset); err != nil {
		return fmt.Errorf("reading the ext4 superblock: %w", err)
	}
	logSize := binary.LittleEndian.Uint32(sb[0x18:])
	if logSize > 6 {
		return fmt.Errorf("corrupt ext4 superblock: block size 2^%d KiB", logSize)
	}
	blocks := uint64(binary.LittleEndian.Uint32(sb[0x4:]))
	if binary.LittleEndian.Uint32(sb[0x60:])&0x80 != 0 { // INCOMPAT_64BIT
		blocks |= uint64(binary.LittleEndian.Uint32(sb[0x150:])) << 32
	}
	need := blocks << (10 + logSize)
	if blocks > 1<<40 || need > uint64(room) {
		return fmt.Errorf("truncated: the ext4 filesystem needs %d bytes, the image holds %d", need, room)
	}
	return nil
}

// checkedReader remembers the first read that failed within the disk's
// bounds. Reads past the end are the caller's mistake and fail as usual.
type checkedReader struct {
	ra   io.ReaderAt
	size int64
	mu   sync.Mutex
	err  error
}

func (c *checkedReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.ra.ReadAt(p, off)
	if err != nil && off >= 0 && off+int64(len(p)) <= c.size {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("truncated: %d bytes at offset %d lie past the end of the file", len(p)-n, off+int64(n))
		}
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
		return n, err
	}
	return n, err
}

// Err is the first in-bounds read failure, or nil.
func (c *checkedReader) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Partition is one entry of the image's partition table.
type Partition struct {
	// Index is the partition's number in the table, from 1.
	Index       int
	Start, Size int64
	// UUID and Label are the table's partition GUID and name (GPT), which
	// crypttab and fstab name as PARTUUID= and PARTLABEL=.
	UUID, Label string
	// R reads the partition; reads past Size fail.
	R io.ReaderAt
}

// Partitions lists the partitions of the image's GPT or MBR table, those
// that lie within the disk; none when the filesystem fills the whole disk.
// Reads through them count towards Err like those of the filesystem.
func (im *Image) Partitions() (parts []Partition, err error) {
	defer func() {
		if p := recover(); p != nil {
			parts, err = nil, fmt.Errorf("reading the partition table of image %s: corrupt table (%v)", im.file, p)
		}
	}()
	if im.Offset == 0 {
		return nil, nil
	}
	table, err := partition.Read(&storage{ra: im.disk, size: im.disk.size}, sectorSize, sectorSize)
	if err != nil {
		return nil, fmt.Errorf("reading the partition table of image %s: %w", im.file, err)
	}
	for _, p := range table.GetPartitions() {
		if p == nil {
			continue
		}
		s, l := p.GetStart(), p.GetSize()
		if s <= 0 || l <= 0 || s >= im.disk.size || l > im.disk.size-s {
			continue
		}
		parts = append(parts, Partition{Index: p.GetIndex(), Start: s, Size: l, UUID: p.UUID(), Label: p.Label(), R: io.NewSectionReader(im.disk, s, l)})
	}
	return parts, nil
}
