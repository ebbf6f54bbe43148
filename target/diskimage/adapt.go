package diskimage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/diskfs/go-diskfs/backend"
	"github.com/diskfs/go-diskfs/filesystem/ext4"
)

// storage gives go-diskfs the read-only backend it wants over a ReaderAt: the
// raw file, or the qcow2 image's virtual disk.
type storage struct {
	ra   io.ReaderAt
	size int64
	// sr gives Read and Seek over ra, positioned as go-diskfs asks.
	sr *io.SectionReader
}

func newStorage(ra io.ReaderAt, size int64) *storage {
	return &storage{ra: ra, size: size, sr: io.NewSectionReader(ra, 0, size)}
}

var _ backend.Storage = (*storage)(nil)

func (s *storage) ReadAt(p []byte, off int64) (int, error) { return s.ra.ReadAt(p, off) }

func (s *storage) Read(p []byte) (int, error) { return s.sr.Read(p) }

func (s *storage) Seek(offset int64, whence int) (int64, error) { return s.sr.Seek(offset, whence) }

func (s *storage) Stat() (fs.FileInfo, error) { return diskInfo{size: s.size}, nil }
func (s *storage) Close() error               { return nil }
func (s *storage) Sys() (*os.File, error)     { return nil, backend.ErrNotSuitable }
func (s *storage) Path() string               { return "" }

func (s *storage) Writable() (backend.WritableFile, error) {
	return nil, backend.ErrIncorrectOpenMode
}

type diskInfo struct{ size int64 }

func (d diskInfo) Name() string       { return "disk" }
func (d diskInfo) Size() int64        { return d.size }
func (d diskInfo) Mode() fs.FileMode  { return 0o400 }
func (d diskInfo) ModTime() time.Time { return time.Time{} }
func (d diskInfo) IsDir() bool        { return false }
func (d diskInfo) Sys() any           { return nil }

// maxDirBytes bounds a directory go-diskfs will read: it loads a directory
// whole, so a crafted size must not become a huge allocation. A directory of
// MaxDirEntries long names fits many times over.
const maxDirBytes = 64 << 20

// Each call into go-diskfs may read at most opMaxBytes in at most opMaxReads
// reads of the disk. go-diskfs follows an extent tree's pointers with no
// depth limit, so a tree that points at itself would recurse until the stack
// overflows, which no recover catches; the budget ends it with an error. A
// legitimate call stays far below: the largest directory allowed, with an
// inode read for each of its entries.
const (
	opMaxBytes = 256 << 20
	opMaxReads = 1 << 20
)

var errBudget = errors.New("corrupt filesystem: one lookup reads too much of the disk (a looping extent tree?)")

// budget counts what one call reads.
type budget struct {
	bytes, reads int64
}

func (b *budget) take(n int) error {
	b.bytes += int64(n)
	b.reads++
	if b.bytes > opMaxBytes || b.reads > opMaxReads {
		return errBudget
	}
	return nil
}

// budgeted is the disk as go-diskfs sees it: every read is charged.
type budgeted struct {
	ra io.ReaderAt
	b  *budget
}

func (d *budgeted) ReadAt(p []byte, off int64) (int, error) {
	if err := d.b.take(len(p)); err != nil {
		return 0, err
	}
	return d.ra.ReadAt(p, off)
}

// ext4View adapts go-diskfs's ext4 reader to fs.ReadLinkFS, so that
// sysroot.FromFS sees symlinks as links and resolves them itself. go-diskfs
// follows links on Open with no bound and no root; sysroot.FromFS only ever
// passes it names with no link left in them. Its errors do not wrap
// fs.ErrNotExist, so absence is decided here from the parent's listing.
//
// Calls are serialized: go-diskfs does not say it is safe for concurrent
// use, and each call's read budget must be its own.
type ext4View struct {
	fs     *ext4.FileSystem
	budget *budget
	modes  *inodeModes

	mu sync.Mutex
	// The image does not change under us, so listings are kept: every
	// lookup checks each parent, and would otherwise reread the path from
	// the root each time. cached bounds what is kept.
	dirs   map[string][]fs.DirEntry
	stats  map[string]fs.FileInfo
	cached int
	// broken is the first failure to read what the filesystem says exists.
	broken error
}

// fail records a failure of go-diskfs on an entry known to exist: the
// filesystem is corrupt (or the disk unreadable), whatever the entry.
func (v *ext4View) fail(op, name string, err error) error {
	err = &fs.PathError{Op: op, Path: name, Err: err}
	if v.broken == nil {
		v.broken = err
	}
	return err
}

// Err is the first corruption met, or nil.
func (v *ext4View) Err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.broken
}

// maxCachedEntries bounds the listings kept in memory.
const maxCachedEntries = 1 << 20

var _ fs.ReadLinkFS = (*ext4View)(nil)
var _ fs.ReadDirFS = (*ext4View)(nil)

// enter starts one call: it takes the lock and a fresh budget.
func (v *ext4View) enter() {
	v.mu.Lock()
	*v.budget = budget{}
}

// leave ends it, and turns a panic in the parser, on a crafted image, into
// an error.
func (v *ext4View) leave(op, name string, err *error) {
	if p := recover(); p != nil {
		*err = v.fail(op, name, fmt.Errorf("corrupt filesystem (%v)", p))
	}
	v.mu.Unlock()
}

// diskfsName maps an fs.FS name onto go-diskfs's form: "/" for the root.
func diskfsName(name string) string {
	if name == "." {
		return "/"
	}
	return "/" + name
}

func (v *ext4View) Open(name string) (f fs.File, err error) {
	v.enter()
	defer v.leave("open", name, &err)
	info, err := v.lstat(name)
	if err != nil {
		return nil, err
	}
	if f, err = v.openExtents(name, info); err != nil {
		return nil, v.fail("open", name, err)
	} else if f != nil {
		return &file{File: f, v: v, name: name}, nil
	}
	f, err = v.fs.Open(name)
	if err != nil {
		return nil, v.fail("open", name, err)
	}
	return &file{File: f, v: v, name: name}, nil
}

// file charges its reads to the view like any other call.
type file struct {
	fs.File
	v    *ext4View
	name string
}

func (f *file) Read(p []byte) (n int, err error) {
	f.v.enter()
	defer f.v.leave("read", f.name, &err)
	n, err = f.File.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, f.v.fail("read", f.name, err)
	}
	return n, err
}

func (v *ext4View) ReadDir(name string) (entries []fs.DirEntry, err error) {
	v.enter()
	defer v.leave("readdir", name, &err)
	entries, err = v.readDir(name)
	return slices.Clone(entries), err
}

func (v *ext4View) readDir(name string) ([]fs.DirEntry, error) {
	if entries, ok := v.dirs[name]; ok {
		return entries, nil
	}
	info, err := v.lstat(name)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	if info.Size() > maxDirBytes {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fmt.Errorf("directory of %d bytes, over %d", info.Size(), maxDirBytes)}
	}
	raw, err := v.fs.ReadDir(name)
	if err != nil {
		return nil, v.fail("readdir", name, err)
	}
	entries := make([]fs.DirEntry, len(raw))
	for i, e := range raw {
		p := path.Join(name, e.Name())
		entries[i] = &dirEntry{DirEntry: e, v: v, name: p}
		if err := v.checkEntry(e); err != nil {
			return nil, v.fail("readdir", name, fmt.Errorf("%s: %w", p, err))
		}
	}
	if v.cached+len(entries) <= maxCachedEntries {
		if v.dirs == nil {
			v.dirs = map[string][]fs.DirEntry{}
		}
		v.dirs[name] = entries
		v.cached += len(entries)
	}
	return entries, nil
}

// checkEntry holds a listed entry's type to its inode's. Every lookup lists
// the parent first, so each entry met, on a path read or in a listing a
// collector goes by, is checked. go-diskfs read the inode while listing:
// Info costs no read.
func (v *ext4View) checkEntry(e fs.DirEntry) error {
	info, err := e.Info()
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*ext4.StatT)
	if !ok {
		return errors.New("no inode number")
	}
	return v.modes.check(st.Ino, e.Type())
}

// dirEntry answers Info with the entry's full mode: go-diskfs's own gives
// the file type without the permission bits, which checks read.
type dirEntry struct {
	fs.DirEntry
	v    *ext4View
	name string
}

func (e *dirEntry) Info() (fs.FileInfo, error) { return e.v.Lstat(e.name) }

// Lstat does not follow a final link: go-diskfs's Stat reads the entry's
// own inode. Absence is decided from the parent's listing, so that a read
// failure is never mistaken for a missing file.
func (v *ext4View) Lstat(name string) (info fs.FileInfo, err error) {
	v.enter()
	defer v.leave("lstat", name, &err)
	return v.lstat(name)
}

func (v *ext4View) lstat(name string) (fs.FileInfo, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrInvalid}
	}
	if name != "." {
		dir, base := path.Split(name)
		entries, err := v.readDir(path.Clean(dir))
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() == base }) {
			return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
		}
	}
	if info, ok := v.stats[name]; ok {
		return info, nil
	}
	// go-diskfs walks from the root on every Stat; the answer is kept.
	info, err := v.fs.Stat(diskfsName(name))
	if err != nil {
		return nil, v.fail("lstat", name, err)
	}
	if v.cached < maxCachedEntries {
		if v.stats == nil {
			v.stats = map[string]fs.FileInfo{}
		}
		v.stats[name] = info
		v.cached++
	}
	return info, nil
}

func (v *ext4View) Stat(name string) (fs.FileInfo, error) { return v.Lstat(name) }

func (v *ext4View) ReadLink(name string) (target string, err error) {
	v.enter()
	defer v.leave("readlink", name, &err)
	target, err = v.fs.ReadLink(name)
	if err != nil {
		return "", v.fail("readlink", name, err)
	}
	return target, nil
}
