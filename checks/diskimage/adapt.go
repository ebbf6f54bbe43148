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
	off  int64
}

var _ backend.Storage = (*storage)(nil)

func (s *storage) ReadAt(p []byte, off int64) (int, error) { return s.ra.ReadAt(p, off) }

func (s *storage) Read(p []byte) (int, error) {
	n, err := s.ra.ReadAt(p, s.off)
	s.off += int64(n)
	return n, err
}

func (s *storage) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += s.off
	case io.SeekEnd:
		offset += s.size
	default:
		return 0, fmt.Errorf("seek: bad whence %d", whence)
	}
	if offset < 0 {
		return 0, errors.New("seek: negative offset")
	}
	s.off = offset
	return offset, nil
}

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

// ext4View adapts go-diskfs's ext4 reader to fs.ReadLinkFS, so that
// sysroot.FromFS sees symlinks as links and resolves them itself. go-diskfs
// follows links on Open with no bound and no root; sysroot.FromFS only ever
// passes it names with no link left in them. Its errors do not wrap
// fs.ErrNotExist, so absence is decided here from the parent's listing.
type ext4View struct {
	fs *ext4.FileSystem

	// The image does not change under us, so listings are kept: every
	// lookup checks each parent, and would otherwise reread the path from
	// the root each time. cached bounds what is kept.
	mu     sync.Mutex
	dirs   map[string][]fs.DirEntry
	cached int
}

// maxCachedEntries bounds the listings kept in memory.
const maxCachedEntries = 1 << 20

var _ fs.ReadLinkFS = (*ext4View)(nil)
var _ fs.ReadDirFS = (*ext4View)(nil)

// guard turns a panic in the parser, on a crafted image, into an error.
func guard(op, name string, err *error) {
	if p := recover(); p != nil {
		*err = &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("corrupt filesystem (%v)", p)}
	}
}

// diskfsName maps an fs.FS name onto go-diskfs's form: "/" for the root.
func diskfsName(name string) string {
	if name == "." {
		return "/"
	}
	return "/" + name
}

func (v *ext4View) Open(name string) (f fs.File, err error) {
	defer guard("open", name, &err)
	if _, err := v.Lstat(name); err != nil {
		return nil, err
	}
	return v.fs.Open(name)
}

func (v *ext4View) ReadDir(name string) (entries []fs.DirEntry, err error) {
	defer guard("readdir", name, &err)
	info, err := v.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	if info.Size() > maxDirBytes {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fmt.Errorf("directory of %d bytes, over %d", info.Size(), maxDirBytes)}
	}
	v.mu.Lock()
	entries, ok := v.dirs[name]
	v.mu.Unlock()
	if ok {
		return entries, nil
	}
	entries, err = v.fs.ReadDir(name)
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	v.mu.Lock()
	if v.cached+len(entries) <= maxCachedEntries {
		if v.dirs == nil {
			v.dirs = map[string][]fs.DirEntry{}
		}
		v.dirs[name] = entries
		v.cached += len(entries)
	}
	v.mu.Unlock()
	// Callers sort the slice they get; it must not be the cached one.
	return slices.Clone(entries), nil
}

// Lstat does not follow a final link: go-diskfs's Stat reads the entry's
// own inode. Absence is decided from the parent's listing, so that a read
// failure is never mistaken for a missing file.
func (v *ext4View) Lstat(name string) (info fs.FileInfo, err error) {
	defer guard("lstat", name, &err)
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrInvalid}
	}
	if name != "." {
		dir, base := path.Split(name)
		dir = path.Clean(dir)
		entries, err := v.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		found := false
		for _, e := range entries {
			if e.Name() == base {
				found = true
				break
			}
		}
		if !found {
			return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrNotExist}
		}
	}
	info, err = v.fs.Stat(diskfsName(name))
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: err}
	}
	return info, nil
}

func (v *ext4View) Stat(name string) (fs.FileInfo, error) { return v.Lstat(name) }

func (v *ext4View) ReadLink(name string) (target string, err error) {
	defer guard("readlink", name, &err)
	return v.fs.ReadLink(name)
}
