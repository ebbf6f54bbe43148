package secureboot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/diskfs/go-diskfs/backend"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// An image's EFI system partition is read with go-diskfs, which trusts what
// the partition says: it sizes the FAT from the boot sector before any
// check, follows cluster chains with no end, reads the root directory at
// cluster 2 whatever the boot sector names, and indexes a file's clusters
// by its recorded size. So the boot sector is checked here first, the FAT
// is read once within its bound and every chain followed to its end, and
// what go-diskfs does then runs under a budget of bytes and a recover.
const (
	// maxFATBytes bounds one FAT, with room for an ESP many times the
	// usual size.
	maxFATBytes = 16 << 20
	// maxChainBytes bounds what one cluster chain (a file or directory)
	// may hold; an ESP's largest files are kernels and boot loaders.
	maxChainBytes = 256 << 20
	// maxESPBytes bounds all reads of one partition.
	maxESPBytes = 1 << 30
)

// errNotFAT32 says a partition does not hold a FAT32 file system.
var errNotFAT32 = errors.New("not a FAT32 file system")

// fatLayout is what a FAT32 boot sector says, checked.
type fatLayout struct {
	bytesPerSector, bytesPerCluster int64
	fatStart, fatBytes              int64
	dataStart                       int64
}

// parseFAT32BootSector checks the boot sector bs of a partition of size
// bytes, as far as go-diskfs relies on it.
func parseFAT32BootSector(bs []byte, size int64) (fatLayout, error) {
	le := binary.LittleEndian
	if len(bs) < 512 || bs[510] != 0x55 || bs[511] != 0xaa || string(bs[82:90]) != "FAT32   " {
		return fatLayout{}, errNotFAT32
	}
	bps, spc := int64(le.Uint16(bs[11:])), int64(bs[13])
	reserved, nfats := int64(le.Uint16(bs[14:])), int64(bs[16])
	fatSectors, rootCluster, fsinfo := int64(le.Uint32(bs[36:])), le.Uint32(bs[44:]), int64(le.Uint16(bs[48:]))
	switch {
	case bps != 512 && bps != 1024 && bps != 2048 && bps != 4096:
		return fatLayout{}, fmt.Errorf("FAT32 boot sector: %d bytes per sector", bps)
	case spc == 0 || spc&(spc-1) != 0 || spc*bps > 1<<16:
		return fatLayout{}, fmt.Errorf("FAT32 boot sector: %d sectors per cluster", spc)
	case reserved == 0 || fsinfo == 0 || fsinfo >= reserved:
		return fatLayout{}, fmt.Errorf("FAT32 boot sector: FSInfo sector %d outside the %d reserved sectors", fsinfo, reserved)
	case nfats != 2:
		// go-diskfs reads the second FAT where the first one ends.
		return fatLayout{}, fmt.Errorf("FAT32 boot sector: %d FATs; two are read", nfats)
	case rootCluster != 2:
		return fatLayout{}, fmt.Errorf("FAT32 boot sector: root directory at cluster %d; it is read at cluster 2", rootCluster)
	case fatSectors == 0 || fatSectors*bps > maxFATBytes:
		return fatLayout{}, fmt.Errorf("FAT32 boot sector: a FAT of %d sectors of %d bytes, more than the %d bytes read", fatSectors, bps, maxFATBytes)
	}
	l := fatLayout{bytesPerSector: bps, bytesPerCluster: spc * bps, fatStart: reserved * bps, fatBytes: fatSectors * bps}
	l.dataStart = l.fatStart + 2*l.fatBytes
	if l.dataStart > size {
		return fatLayout{}, fmt.Errorf("FAT32 boot sector: the FATs end at %d, past the partition's %d bytes", l.dataStart, size)
	}
	return l, nil
}

// checkFATChains follows every cluster chain of fat the way go-diskfs
// does and fails on one that loops or holds more than maxClusters.
func checkFATChains(fat []byte, maxClusters int) error {
	n := uint32(len(fat) / 4)
	next := func(c uint32) (uint32, bool) {
		v := binary.LittleEndian.Uint32(fat[4*c:])
		if v&0xffffff8 == 0xffffff8 || v < 2 || v >= n {
			return 0, false
		}
		return v, true
	}
	// length[c] is how many clusters the chain from c holds, once known;
	// onPath marks the clusters of the walk under way.
	length := make([]uint32, n)
	onPath := make([]bool, n)
	var path []uint32
	for start := uint32(2); start < n; start++ {
		path = path[:0]
		c, ok := start, true
		for ok && length[c] == 0 {
			if onPath[c] {
				return fmt.Errorf("the FAT's cluster chain through cluster %d loops", c)
			}
			onPath[c] = true
			path = append(path, c)
			c, ok = next(c)
		}
		tail := uint32(0)
		if ok {
			tail = length[c]
		}
		for i := len(path) - 1; i >= 0; i-- {
			tail++
			length[path[i]] = tail
			onPath[path[i]] = false
			if int(tail) > maxClusters {
				return fmt.Errorf("the FAT's cluster chain from cluster %d holds more than %d clusters", path[i], maxClusters)
			}
		}
	}
	return nil
}

// partition is go-diskfs's read-only backend over one partition. A read
// outside it, or past the budget, fails and is remembered: go-diskfs drops
// the errors of some reads.
type partition struct {
	r    io.ReaderAt
	size int64
	left int64
	err  error
	// sr gives Read and Seek over the partition's own bounded ReadAt.
	sr *io.SectionReader
}

var _ backend.Storage = (*partition)(nil)

func (p *partition) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 || off > p.size || int64(len(b)) > p.size-off {
		return 0, p.fail(fmt.Errorf("a read of %d bytes at %d lies outside the partition's %d bytes", len(b), off, p.size))
	}
	if p.left -= int64(len(b)); p.left < 0 {
		return 0, p.fail(fmt.Errorf("reading more than %d bytes: %w", maxESPBytes, sysroot.ErrTooLarge))
	}
	n, err := p.r.ReadAt(b, off)
	if err != nil && n < len(b) {
		p.fail(err)
	}
	return n, err
}

func (p *partition) fail(err error) error {
	if p.err == nil {
		p.err = err
	}
	return err
}

func (p *partition) Read(b []byte) (int, error) { return p.sr.Read(b) }

func (p *partition) Seek(offset int64, whence int) (int64, error) { return p.sr.Seek(offset, whence) }

func (p *partition) Stat() (fs.FileInfo, error) { return partInfo(p.size), nil }
func (p *partition) Close() error               { return nil }
func (p *partition) Sys() (*os.File, error)     { return nil, backend.ErrNotSuitable }
func (p *partition) Path() string               { return "" }

func (p *partition) Writable() (backend.WritableFile, error) {
	return nil, backend.ErrIncorrectOpenMode
}

// partInfo is the partition's size as go-diskfs asks for it.
type partInfo int64

func (partInfo) Name() string       { return "partition" }
func (s partInfo) Size() int64      { return int64(s) }
func (partInfo) Mode() fs.FileMode  { return 0o400 }
func (partInfo) ModTime() time.Time { return time.Time{} }
func (partInfo) IsDir() bool        { return false }
func (partInfo) Sys() any           { return nil }
