package sysroot

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"syscall"
)

// Dir is an open directory of a tree, for walking the tree directory by
// directory: ReadDir lists it and OpenDir opens a directory in it, each
// relative to it. Going through FS, every listing resolves its path from
// the root again, one lookup per component of it, which over a whole
// tree costs more than the listing.
type Dir interface {
	// Name is the directory's path in the tree.
	Name() string
	// ReadDir lists the directory sorted by name, bounded by
	// MaxDirEntries; each entry's Info is its lstat.
	ReadDir() ([]fs.DirEntry, error)
	// OpenDir opens the directory called name in this one. want is the
	// entry's Info from ReadDir: a name that is no longer that directory
	// (a symlink put in its place since) is refused, so a walk follows
	// no symlink.
	OpenDir(name string, want fs.FileInfo) (Dir, error)
	Close() error
}

// OpenDir opens the directory name of fsys, its symlinks followed inside
// the tree as Stat follows them.
func OpenDir(fsys FS, name string) (Dir, error) {
	if r, ok := fsys.(*rootFS); ok {
		return r.openDir(name)
	}
	info, err := fsys.Stat(name)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("listing %s: %w", fsys.Display(name), syscall.ENOTDIR)
	}
	return &viewDir{fsys: fsys, name: fsys.Display(name)}, nil
}

// rootDir is a directory of a tree on disk, held open as an os.Root: a
// directory in it is opened from it, one component at a time, and can no
// more leave it than the tree's own root can be left.
type rootDir struct {
	root *os.Root
	name string
	// where names it on this machine, for errors.
	where string
}

func (r *rootFS) openDir(name string) (Dir, error) {
	p, err := r.resolve(name, true)
	if err != nil {
		return nil, r.wrap(name, err)
	}
	sub, err := r.root.OpenRoot(p)
	if err != nil {
		return nil, r.wrap(name, err)
	}
	return &rootDir{root: sub, name: r.Display(name), where: r.hostPath(name)}, nil
}

func (d *rootDir) Name() string { return d.name }

func (d *rootDir) ReadDir() ([]fs.DirEntry, error) {
	// O_NONBLOCK and O_DIRECTORY: the same open ReadDir does; the
	// entries of a directory opened in a Root carry their lstat.
	f, err := d.root.OpenFile(".", os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, d.wrap(err)
	}
	defer f.Close()
	entries, err := f.ReadDir(MaxDirEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, d.wrap(err)
	}
	if len(entries) > MaxDirEntries {
		return nil, fmt.Errorf("listing %s: %w (over %d)", d.where, ErrTooManyEntries, MaxDirEntries)
	}
	sortEntries(entries)
	return entries, nil
}

func (d *rootDir) OpenDir(name string, want fs.FileInfo) (Dir, error) {
	where := d.where + "/" + name
	if !fs.ValidPath(name) || path.Base(name) != name || name == "." {
		return nil, fmt.Errorf("opening %s: %w", where, fs.ErrInvalid)
	}
	sub, err := d.root.OpenRoot(name)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", where, unwrapPath(err))
	}
	got, err := sub.Stat(".")
	if err != nil {
		sub.Close()
		return nil, fmt.Errorf("opening %s: %w", where, unwrapPath(err))
	}
	if !os.SameFile(want, got) {
		sub.Close()
		return nil, fmt.Errorf("opening %s: it changed since it was listed", where)
	}
	return &rootDir{root: sub, name: path.Join(d.name, name), where: where}, nil
}

func (d *rootDir) Close() error { return d.root.Close() }

func (d *rootDir) wrap(err error) error {
	return &fs.PathError{Op: "reading", Path: d.where, Err: unwrapPath(err)}
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// viewDir is a directory of any other view (a disk image's), read
// through its bounded ReadDir: those views keep their own listings.
type viewDir struct {
	fsys FS
	name string
}

func (d *viewDir) Name() string { return d.name }

func (d *viewDir) ReadDir() ([]fs.DirEntry, error) { return d.fsys.ReadDir(d.name) }

func (d *viewDir) OpenDir(name string, want fs.FileInfo) (Dir, error) {
	p := path.Join(d.name, name)
	if !fs.ValidPath(name) || path.Base(name) != name || name == "." {
		return nil, fmt.Errorf("opening %s: %w", p, fs.ErrInvalid)
	}
	info, err := d.fsys.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() || !want.IsDir() {
		return nil, fmt.Errorf("opening %s: it changed since it was listed", p)
	}
	return &viewDir{fsys: d.fsys, name: p}, nil
}

func (d *viewDir) Close() error { return nil }
