// Package sysroot reads a filesystem tree that gpuhost does not trust: an
// image's rootfs, or the live host seen from "/". Every access goes through an
// os.Root, so no path and no symlink can lead outside the tree; only regular
// files are read, never more than a bounded number of bytes, and opening a FIFO
// or device node cannot block.
package sysroot

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/gpuhost/gpuhost/internal/userfile"
)

// DefaultMaxFileSize bounds ReadFile. Configuration files are kilobytes; a
// multi-megabyte sshd_config is an attack or garbage, and either way an error.
const DefaultMaxFileSize = 8 << 20

// MaxDirEntries bounds ReadDir, so that a directory of millions of entries
// planted in an image cannot exhaust memory.
const MaxDirEntries = 20000

var (
	// ErrNotRegular is returned when a path names a FIFO, socket, device or
	// directory where a regular file was expected.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is returned when a file exceeds the read limit.
	ErrTooLarge = errors.New("file exceeds read limit")
	// ErrTooManyEntries is returned when a directory exceeds MaxDirEntries.
	ErrTooManyEntries = errors.New("directory has too many entries")
)

// FS is a read-only view of a tree. Names are slash-separated and relative to
// the root; a leading "/" is accepted and means the root itself.
type FS interface {
	// ReadFile reads a regular file of at most DefaultMaxFileSize bytes.
	ReadFile(name string) ([]byte, error)
	// ReadFileLimit reads a regular file of at most max bytes.
	ReadFileLimit(name string, max int64) ([]byte, error)
	// Stream opens a regular file of at most max bytes for reading in
	// pieces, for files too large to hold (a container layer to hash). A
	// file that grows past max while read fails the read with ErrTooLarge.
	Stream(name string, max int64) (io.ReadCloser, error)
	// Stat follows symlinks, as long as they stay inside the root.
	Stat(name string) (fs.FileInfo, error)
	// Lstat does not follow a final symlink.
	Lstat(name string) (fs.FileInfo, error)
	// ReadDir lists a directory sorted by name, bounded by MaxDirEntries.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Glob returns the names matching pattern, as path.Match defines it.
	Glob(pattern string) ([]string, error)
	// Display names a file as it is inside the target, for facts and messages.
	Display(name string) string
	// Root is the directory this view is rooted at.
	Root() string
}

type rootFS struct {
	root *os.Root
	dir  string
}

var _ FS = (*rootFS)(nil)

// Open returns a view of dir. The caller closes it when done.
func Open(dir string) (FS, io.Closer, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("resolving root %q: %w", dir, err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, nil, fmt.Errorf("opening root %q: %w", dir, err)
	}
	return &rootFS{root: r, dir: abs}, r, nil
}

// clean maps a user-facing name onto os.Root's relative form.
func clean(name string) string {
	name = path.Clean("/" + name)
	name = strings.TrimPrefix(name, "/")
	if name == "" {
		return "."
	}
	return name
}

func (r *rootFS) Root() string { return r.dir }

// Display names a file as it is inside the target ("/etc/ssh/sshd_config"),
// so that facts and messages read the same whether the image sits in a
// build directory or runs as the host.
func (r *rootFS) Display(name string) string {
	return "/" + strings.TrimPrefix(clean(name), ".")
}

// hostPath names a file where it is on this machine. Errors use it: "reading
// /etc/passwd" would leave the reader wondering whose file it was.
func (r *rootFS) hostPath(name string) string {
	rel := clean(name)
	if rel == "." {
		return r.dir
	}
	return strings.TrimSuffix(r.dir, "/") + "/" + rel
}

func (r *rootFS) ReadFile(name string) ([]byte, error) {
	return r.ReadFileLimit(name, DefaultMaxFileSize)
}

func (r *rootFS) ReadFileLimit(name string, max int64) ([]byte, error) {
	return readAll(r.Stream(name, max))
}

func (r *rootFS) Stream(name string, max int64) (io.ReadCloser, error) {
	p, err := r.resolve(name, true)
	if err != nil {
		return nil, r.wrap(name, err)
	}
	// O_NONBLOCK: opening a FIFO for reading with no writer would otherwise
	// block forever. The fstat below then refuses it. O_NOFOLLOW: resolve
	// already followed every link, so one appearing now is a race; refuse it.
	f, err := r.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, r.wrap(name, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, r.wrap(name, err)
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("reading %s: %w (%s)", r.hostPath(name), ErrNotRegular, userfile.Kind(info.Mode()))
	}
	if info.Size() > max {
		f.Close()
		return nil, fmt.Errorf("reading %s: %w (%d bytes, limit %d)", r.hostPath(name), ErrTooLarge, info.Size(), max)
	}
	// Files in /proc report size 0, so the limit is enforced on the read too.
	return &bounded{rc: f, left: max, max: max, where: r.hostPath(name)}, nil
}

// readAll reads what Stream opened, whole.
func readAll(rc io.ReadCloser, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// ReadAllLimit reads r to its end within max bytes: past them it fails with
// an error that names where and wraps ErrTooLarge, rather than return a
// cut-short read. It bounds a stream (a tar entry, a decompressor, a
// registry blob) as ReadFileLimit bounds a file.
func ReadAllLimit(r io.Reader, max int64, where string) ([]byte, error) {
	return io.ReadAll(&bounded{rc: io.NopCloser(r), left: max, max: max, where: where})
}

// bounded fails a read that goes past the limit instead of returning less.
type bounded struct {
	rc        io.ReadCloser
	left, max int64
	where     string
}

func (b *bounded) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("reading %s: %w (limit %d)", b.where, ErrTooLarge, b.max)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return n, fmt.Errorf("reading %s: %w", b.where, err)
	}
	return n, err
}

func (b *bounded) Close() error { return b.rc.Close() }

func (r *rootFS) Stat(name string) (fs.FileInfo, error) {
	p, err := r.resolve(name, true)
	if err != nil {
		return nil, r.wrap(name, err)
	}
	info, err := r.root.Lstat(p)
	return info, r.wrap(name, err)
}

func (r *rootFS) Lstat(name string) (fs.FileInfo, error) {
	p, err := r.resolve(name, false)
	if err != nil {
		return nil, r.wrap(name, err)
	}
	info, err := r.root.Lstat(p)
	return info, r.wrap(name, err)
}

// Readlink returns the target of the symlink name without following it (the
// target is text, not resolved, so it may point anywhere). It is not part of
// FS so that other implementations need not provide it; callers assert
// interface{ Readlink(string) (string, error) }.
func (r *rootFS) Readlink(name string) (string, error) {
	p, err := r.resolve(name, false)
	if err != nil {
		return "", r.wrap(name, err)
	}
	target, err := r.root.Readlink(p)
	return target, r.wrap(name, err)
}

func (r *rootFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := r.resolve(name, true)
	if err != nil {
		return nil, r.wrap(name, err)
	}
	f, err := r.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, r.wrap(name, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(MaxDirEntries + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, r.wrap(name, err)
	}
	if len(entries) > MaxDirEntries {
		return nil, fmt.Errorf("listing %s: %w (over %d)", r.hostPath(name), ErrTooManyEntries, MaxDirEntries)
	}
	sortEntries(entries)
	return entries, nil
}

func (r *rootFS) Glob(pattern string) ([]string, error) {
	matches, err := fs.Glob(globFS{r}, clean(pattern))
	if err != nil {
		return nil, fmt.Errorf("matching %q under %s: %w", pattern, r.dir, err)
	}
	return matches, nil
}

// wrap names the file in an error, in the form the user sees.
func (r *rootFS) wrap(name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: "reading", Path: r.hostPath(name), Err: err}
}

// globFS adapts rootFS to fs.ReadDirFS so fs.Glob uses the bounded ReadDir.
type globFS struct{ r *rootFS }

func (g globFS) Open(name string) (fs.File, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: errors.ErrUnsupported}
}

func (g globFS) ReadDir(name string) ([]fs.DirEntry, error) { return g.r.ReadDir(name) }

func (g globFS) Stat(name string) (fs.FileInfo, error) { return g.r.Lstat(name) }

// IsNotExist reports whether err means the file is absent, which collectors
// treat as "not configured" rather than as an error.
func IsNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

func sortEntries(entries []fs.DirEntry) {
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}

// maxLinkHops is how many symlinks one lookup may follow, as Linux's
// MAXSYMLINKS; past it the lookup fails with ELOOP.
const maxLinkHops = 40

// resolve follows symlinks the way the kernel would inside a chroot at the
// root: an absolute target starts again from the root, and ".." never climbs
// above it. os.Root alone refuses absolute links, yet images are full of them
// (/var/run -> /run, nginx's sites-enabled). The result contains no link,
// except the final component when followFinal is false.
func (r *rootFS) resolve(name string, followFinal bool) (string, error) {
	return resolveLinks(name, followFinal, r.root.Lstat, r.root.Readlink)
}

// Resolve returns name with every symlink in it followed inside root, as
// the kernel would inside a chroot at root (see resolve): what opening it
// under root then reaches is what a process in the tree would read. For
// code that holds an os.Root of its own, such as a builder writing the
// tree this package later reads.
func Resolve(root *os.Root, name string) (string, error) {
	return resolveLinks(name, true, root.Lstat, root.Readlink)
}

// resolveLinks is the one walk every view uses, given how to lstat and read
// a link beneath its root.
func resolveLinks(name string, followFinal bool, lstat func(string) (fs.FileInfo, error), readlink func(string) (string, error)) (string, error) {
	todo := strings.Split(clean(name), "/")
	var done []string
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		cur := path.Join(append(done, c)...)
		if len(todo) == 0 && !followFinal {
			done = append(done, c)
			break
		}
		info, err := lstat(cur)
		if err != nil {
			if IsNotExist(err) {
				// Let the caller's own operation report the absence.
				return path.Join(append(append(done, c), todo...)...), nil
			}
			return "", err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			if len(todo) > 0 && !info.IsDir() {
				return "", syscall.ENOTDIR
			}
			done = append(done, c)
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", syscall.ELOOP
		}
		target, err := readlink(cur)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			done = nil
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}
