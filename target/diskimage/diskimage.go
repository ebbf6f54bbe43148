// Package diskimage reads the root filesystem of a disk image without
// mounting it: no root, no loop device. It reads raw and qcow2 images holding
// ext4, on the whole disk or in a GPT or MBR partition, and exposes the
// filesystem as a sysroot.FS, with the guarantees a rootfs directory has.
package diskimage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// qcow2Magic opens every qcow2 file.
var qcow2Magic = []byte{'Q', 'F', 'I', 0xfb}

// ErrNoFilesystem is returned when an image holds no ext4 filesystem that
// this package can find.
var ErrNoFilesystem = errors.New("no ext4 filesystem found")

// Options says how to open an image. The zero value is what untrusted input
// needs: no file outside the image is opened, the root filesystem is chosen
// by the rule of chooseRoot, and DefaultLimits hold.
type Options struct {
	// AllowBacking, when set, is a directory that a qcow2 image's backing
	// chain may use: every backing file must lie inside it, reached without
	// a symbolic link, and be a regular file. Unset, an image naming a
	// backing file is refused.
	AllowBacking string
	// RootPartition, when set, is the number of the partition holding the
	// root filesystem, for a disk whose root cannot be told from the table
	// and the filesystems.
	RootPartition int
	// Limits bound the memory, reads and time an image may take; a zero
	// field takes DefaultLimits'.
	Limits Limits
	// EncryptedRoot, when set, lets Open succeed on a disk whose root is
	// inside a LUKS volume: the Image then has Encrypted set and no FS,
	// and the caller reads the root's files from elsewhere. Unset, such a
	// disk is an *EncryptedRootError.
	EncryptedRoot bool
}

// Image is an open disk image.
type Image struct {
	file  string
	chain *chain
	disk  *checkedReader
	table *partitionTable
	view  *ext4View
	fsys  sysroot.FS
	// Format is "raw" or "qcow2".
	Format string
	// Offset is where the filesystem starts in the disk, in bytes.
	Offset int64
	// Root is the partition holding the root filesystem; nil when the
	// filesystem fills the whole disk.
	Root *Partition
	// Encrypted is the LUKS volume the root is inside, when it is (and
	// Options.EncryptedRoot allowed it); FS is nil then.
	Encrypted *EncryptedRoot

	allowEncrypted bool
}

// Open opens file, a raw or qcow2 disk image, and finds its ext4 root
// filesystem, with the zero Options. A file that is neither, or is cut
// short, or corrupt, or refers to a file outside itself, is an error naming
// file. The caller closes the Image.
func Open(file string) (*Image, error) { return Options{}.Open(context.Background(), file) }

// Open opens file as the package Open does, with o. Reads of the image end
// with an error once ctx is done.
func (o Options) Open(ctx context.Context, file string) (img *Image, err error) {
	c := &chain{w: newWork(ctx, o.Limits)}
	if o.AllowBacking != "" {
		dir, err := filepath.Abs(o.AllowBacking)
		if err != nil {
			return nil, fmt.Errorf("the backing files' directory %s: %w", o.AllowBacking, err)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("the backing files' directory %s: not a directory", o.AllowBacking)
		}
		c.allow = filepath.Clean(dir)
	}
	top, err := c.openTop(file)
	if err != nil {
		return nil, fmt.Errorf("opening image: %w", err)
	}
	im := &Image{file: file, chain: c, allowEncrypted: o.EncryptedRoot}
	// The libraries below parse what the image says; a crafted image must
	// give an error, never take the process down.
	defer func() {
		if p := recover(); p != nil {
			img, err = nil, fmt.Errorf("reading image %s: corrupt image (%v)", file, p)
		}
		if err != nil {
			c.close()
		}
	}()
	if top.size < 4 {
		return nil, fmt.Errorf("reading image %s: too short to be a disk image (%d bytes)", file, top.size)
	}
	d, format, err := c.openDisk(top, "", 0)
	if err != nil {
		return nil, fmt.Errorf("reading image %s: %w", file, err)
	}
	if d.Size() <= 0 {
		return nil, fmt.Errorf("reading image %s: no virtual size", file)
	}
	im.Format = format
	im.disk = &checkedReader{ra: d, size: d.Size(), w: c.w}
	if err := im.findRoot(o.RootPartition); err != nil {
		return nil, fmt.Errorf("reading image %s: %w", file, err)
	}
	if err := im.disk.Err(); err != nil {
		return nil, fmt.Errorf("reading image %s: %w", file, err)
	}
	return im, nil
}

// FS is the image's root filesystem; nil when it is Encrypted.
func (im *Image) FS() sysroot.FS { return im.fsys }

// Err reports the first damage met so far: a read of the disk that failed
// inside its bounds (a qcow2 cut short, a cluster pointing past the file's
// end), a limit reached, or a file the filesystem lists but that cannot be
// read (a corrupt inode or extent tree). Collectors see such failures as
// errors on single files; a scan checks Err afterwards so that a damaged
// image fails as a whole. Absent files, oversized files and link loops are
// not damage.
func (im *Image) Err() error {
	if err := im.disk.Err(); err != nil {
		return fmt.Errorf("reading image %s: %w", im.file, err)
	}
	if im.view == nil {
		return nil
	}
	if err := im.view.Err(); err != nil {
		return fmt.Errorf("reading image %s: corrupt filesystem: %w", im.file, err)
	}
	return nil
}

// Spent is what the image has cost so far: the bytes read from its files
// and inflated from compressed clusters, which Limits.MaxBytes bounds.
func (im *Image) Spent() int64 {
	w := im.chain.w
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.read
}

// Close releases the image's files.
func (im *Image) Close() error {
	im.chain.close()
	return nil
}

// checkedReader remembers the first read that failed within the disk's
// bounds. A read at or past the end is io.EOF, the caller's probe, not
// damage: go-diskfs looks for a backup GPT at the last sector of any disk.
type checkedReader struct {
	ra   io.ReaderAt
	size int64
	// w is charged for every byte read, whether from a file, a cache or
	// an inflated cluster: the budget bounds the work a scan asks of the
	// disk, not only the file reads under it.
	w   *work
	mu  sync.Mutex
	err error
}

func (c *checkedReader) ReadAt(p []byte, off int64) (int, error) {
	if err := c.w.charge(len(p)); err != nil {
		c.record(err)
		return 0, err
	}
	n, err := c.ra.ReadAt(p, off)
	if err != nil && n < len(p) && off >= 0 && off+int64(len(p)) <= c.size {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("truncated: %d bytes at offset %d lie past the end of the file", len(p)-n, off+int64(n))
		}
		c.record(err)
		return n, err
	}
	return n, err
}

func (c *checkedReader) record(err error) {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	c.mu.Unlock()
}

// Err is the first in-bounds read failure, or nil.
func (c *checkedReader) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Partitions lists the partitions of the image's GPT or MBR table; none
// when the filesystem fills the whole disk. Reads through them count
// towards Err like those of the filesystem.
func (im *Image) Partitions() ([]Partition, error) {
	if im.table == nil {
		return nil, nil
	}
	parts := slices.Clone(im.table.Parts)
	for i := range parts {
		parts[i].R = io.NewSectionReader(im.disk, parts[i].Start, parts[i].Size)
	}
	return parts, nil
}
