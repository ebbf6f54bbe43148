package sysroot

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/gpuhost/gpuhost/internal/userfile"
)

// FromFS returns a view of fsys with the guarantees Open gives over a
// directory: every symlink is resolved here, inside the tree (an absolute
// target restarts at its root, ".." never climbs above it, at most
// maxLinkHops links per lookup), only regular files are read, reads and
// listings are bounded. name names the tree in errors and is what Root
// returns (a disk image's file name, say).
//
// Symlinks are seen only when fsys implements fs.ReadLinkFS, whose Lstat must
// not follow a final link. Without it the view relies on fs.Stat, and fsys
// alone decides what its links mean; give such an fs.FS only trees whose
// links fsys keeps inside itself (fstest.MapFS has none).
func FromFS(fsys fs.FS, name string) FS {
	return &fsView{fsys: fsys, name: name}
}

type fsView struct {
	fsys fs.FS
	name string
}

var _ FS = (*fsView)(nil)

func (v *fsView) Root() string { return v.name }

func (v *fsView) Display(name string) string {
	return "/" + strings.TrimPrefix(clean(name), ".")
}

// where names a file in errors: "disk.qcow2:/etc/passwd", so that no one
// takes the image's file for the host's.
func (v *fsView) where(name string) string {
	return v.name + ":" + v.Display(name)
}

func (v *fsView) wrap(name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: "reading", Path: v.where(name), Err: err}
}

func (v *fsView) lstat(p string) (fs.FileInfo, error) {
	if l, ok := v.fsys.(fs.ReadLinkFS); ok {
		return l.Lstat(p)
	}
	return fs.Stat(v.fsys, p)
}

func (v *fsView) readlink(p string) (string, error) {
	if l, ok := v.fsys.(fs.ReadLinkFS); ok {
		return l.ReadLink(p)
	}
	return "", &fs.PathError{Op: "readlink", Path: p, Err: errors.ErrUnsupported}
}

// resolve is rootFS.resolve over fsys: the result names no symlink, except
// the final component when followFinal is false.
func (v *fsView) resolve(name string, followFinal bool) (string, error) {
	return resolveLinks(name, followFinal, v.lstat, v.readlink)
}

func (v *fsView) ReadFile(name string) ([]byte, error) {
	return v.ReadFileLimit(name, DefaultMaxFileSize)
}

func (v *fsView) ReadFileLimit(name string, max int64) ([]byte, error) {
	return readAll(v.Stream(name, max))
}

func (v *fsView) Stream(name string, max int64) (io.ReadCloser, error) {
	p, err := v.resolve(name, true)
	if err != nil {
		return nil, v.wrap(name, err)
	}
	info, err := v.lstat(p)
	if err != nil {
		return nil, v.wrap(name, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("reading %s: %w (%s)", v.where(name), ErrNotRegular, userfile.Kind(info.Mode()))
	}
	if info.Size() > max {
		return nil, fmt.Errorf("reading %s: %w (%d bytes, limit %d)", v.where(name), ErrTooLarge, info.Size(), max)
	}
	f, err := v.fsys.Open(p)
	if err != nil {
		return nil, v.wrap(name, err)
	}
	// The size came from metadata the image wrote; the read is bounded too.
	return &bounded{rc: f, left: max, max: max, where: v.where(name)}, nil
}

func (v *fsView) Stat(name string) (fs.FileInfo, error) {
	p, err := v.resolve(name, true)
	if err != nil {
		return nil, v.wrap(name, err)
	}
	info, err := v.lstat(p)
	return info, v.wrap(name, err)
}

func (v *fsView) Lstat(name string) (fs.FileInfo, error) {
	p, err := v.resolve(name, false)
	if err != nil {
		return nil, v.wrap(name, err)
	}
	info, err := v.lstat(p)
	return info, v.wrap(name, err)
}

// Readlink returns the target of the symlink name, unresolved, as
// rootFS.Readlink does.
func (v *fsView) Readlink(name string) (string, error) {
	p, err := v.resolve(name, false)
	if err != nil {
		return "", v.wrap(name, err)
	}
	target, err := v.readlink(p)
	return target, v.wrap(name, err)
}

func (v *fsView) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := v.resolve(name, true)
	if err != nil {
		return nil, v.wrap(name, err)
	}
	entries, err := fs.ReadDir(v.fsys, p)
	if err != nil {
		return nil, v.wrap(name, err)
	}
	if len(entries) > MaxDirEntries {
		return nil, fmt.Errorf("listing %s: %w (over %d)", v.where(name), ErrTooManyEntries, MaxDirEntries)
	}
	sortEntries(entries)
	return entries, nil
}

func (v *fsView) Glob(pattern string) ([]string, error) {
	matches, err := fs.Glob(viewGlobFS{v}, clean(pattern))
	if err != nil {
		return nil, fmt.Errorf("matching %q under %s: %w", pattern, v.name, err)
	}
	return matches, nil
}

// viewGlobFS lets fs.Glob list through the bounded, link-resolving ReadDir.
type viewGlobFS struct{ v *fsView }

func (g viewGlobFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: errors.ErrUnsupported}
}

func (g viewGlobFS) ReadDir(name string) ([]fs.DirEntry, error) { return g.v.ReadDir(name) }

func (g viewGlobFS) Stat(name string) (fs.FileInfo, error) { return g.v.Lstat(name) }
