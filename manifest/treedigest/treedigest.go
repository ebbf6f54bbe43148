// Package treedigest computes the digest of a root file system tree: a walk
// in sorted order that hashes every entry's path, type, permission bits,
// owner and contents (a regular file's bytes, a symlink's target, a
// device's numbers, every extended attribute, and which paths are hard
// links of one file). Modification times are left out: they record when a
// build ran, not what it made. Two builds of one lock with the same
// SOURCE_DATE_EPOCH give the same digest; the build compares them.
//
// Each entry is one line of text (Walk gives them), so that two trees whose
// digests differ can be told apart by a plain diff of their listings
// (`gpuhost tree-digest --list`).
package treedigest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Prefix is what a digest starts with.
const Prefix = "sha256:"

// maxXattrs bounds the extended attributes read from one entry.
const maxXattrs = 64 << 10

// Options change what a walk hashes.
type Options struct {
	// Exclude are regular files whose content is not hashed, as paths
	// inside the tree ("/var/log/dpkg.log") or path.Match patterns
	// ("/var/log/apt/*"). An excluded file still has its line, with its
	// path and the word "excluded", so that nothing is left out unseen. An
	// exclusion names a regular file only: a directory or symlink at an
	// excluded path is walked and listed like any other, so that it hides
	// nothing under it.
	Exclude []string
	// MaxBytes bounds the file contents hashed, the whole tree together;
	// DefaultMaxBytes when zero.
	MaxBytes int64
	// Timeout bounds the walk; DefaultTimeout when zero.
	Timeout time.Duration
}

// The bounds of a walk when Options leaves them zero: a GPU image with its
// CUDA toolkit holds some gigabytes, and a build hashes its tree once.
const (
	DefaultMaxBytes = 64 << 30
	DefaultTimeout  = 30 * time.Minute
)

// Digest returns "sha256:<hex>" of the tree at root.
func Digest(root string, o Options) (string, error) {
	h := sha256.New()
	err := Walk(root, o, func(line string) error {
		_, err := io.WriteString(h, line+"\n")
		return err
	})
	if err != nil {
		return "", err
	}
	return Prefix + hex.EncodeToString(h.Sum(nil)), nil
}

// Walk calls fn with the line of every entry of the tree at root, in
// sorted path order, root first. A line is
//
//	PATH TYPE MODE UID:GID DETAIL [xattrs=SHA256]
//
// with PATH quoted as Go quotes strings, TYPE one of dir, file, symlink,
// char, block, fifo, socket, MODE the permission and set-id bits in octal,
// and DETAIL a file's sha256 (or "link=PATH" for a later hard link of a file
// already seen), a symlink's quoted target, a device's major:minor, or "-".
// A name may hold any byte but "/" and NUL; the quoting escapes newlines,
// control bytes, quotes, backslashes and bytes that are not UTF-8, so each
// entry is one line whose path strconv.Unquote gives back exactly.
//
// The root is opened as an os.Root, and every other entry is reached by its
// name in the directory already open above it, so no path is resolved and
// none leaves the tree; a symlink is never followed, a file is opened
// without waiting on a FIFO, and what is opened must be what was listed: a
// tree changed under the walk is an error, never a digest.
func Walk(root string, o Options, fn func(line string) error) error {
	return walkWith(root, o, fn, nil)
}

// walkWith is Walk with a hook called for each entry between its listing
// and its reading, where tests change the tree under the walk.
func walkWith(root string, o Options, fn func(line string) error, hook func(p string)) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("tree digest: %w", quoted(err))
	}
	defer r.Close()
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	w := &walker{root: r, opts: o, fn: fn, inodes: map[[2]uint64]string{}, left: o.MaxBytes,
		until: time.Now().Add(o.Timeout), hook: hook,
		buf: make([]byte, 1<<20), xnames: make([]byte, maxXattrs), xval: make([]byte, maxXattrs)}
	return w.walk("/", nil, "")
}

type walker struct {
	root   *os.Root
	opts   Options
	fn     func(string) error
	inodes map[[2]uint64]string
	// left is what may still be hashed of file contents, until when.
	left  int64
	until time.Time
	hook  func(p string)
	// buf holds a file's contents on their way to the hash, and xnames and
	// xval an entry's extended attributes: one of each for the whole walk,
	// since a tree has tens of thousands of entries.
	buf, xnames, xval []byte
}

func (w *walker) excluded(p string) bool {
	for _, pat := range w.opts.Exclude {
		if pat == p {
			return true
		}
		if ok, _ := path.Match(pat, p); ok {
			return true
		}
	}
	return false
}

// walk lists the entry p, called name in the directory parent (nil for the
// root), and what is under it.
func (w *walker) walk(p string, parent *os.File, name string) error {
	if time.Now().After(w.until) {
		return fmt.Errorf("tree digest: the walk ran past its %v at %q", w.opts.Timeout, p)
	}
	st, err := w.lstat(p, parent, name)
	if err != nil {
		return err
	}
	if w.hook != nil {
		w.hook(p)
	}
	typ := typeOf(st.Mode)
	if typ == "file" && w.excluded(p) {
		return w.fn(strconv.Quote(p) + " " + typ + " excluded")
	}
	detail, err := w.detail(p, parent, name, typ, st)
	if err != nil {
		return err
	}
	var dir *os.File
	if typ == "dir" {
		if dir, err = w.openSame(p, parent, name, st, unix.O_DIRECTORY); err != nil {
			return err
		}
		defer dir.Close()
	}
	line := fmt.Sprintf("%s %s %04o %d:%d %s", strconv.Quote(p), typ, st.Mode&0o7777, st.Uid, st.Gid, detail)
	x, err := w.entryXattrs(parent, dir, name)
	if err != nil {
		return fmt.Errorf("tree digest: %q: %w", p, err)
	}
	if x != "" {
		line += " xattrs=" + x
	}
	if err := w.fn(line); err != nil {
		return err
	}
	if typ != "dir" {
		return nil
	}
	return w.walkChildren(p, dir)
}

// lstat describes the entry p without following a symlink: the root
// through the os.Root, any other entry by its name in the directory the
// walk holds open above it, so that no path is resolved again. A name
// comes from reading that directory: one component, never "." or "..".
func (w *walker) lstat(p string, parent *os.File, name string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if parent == nil {
		fi, err := w.root.Lstat(".")
		if err != nil {
			return nil, fmt.Errorf("tree digest: %w", quoted(err))
		}
		sys, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil, fmt.Errorf("tree digest: %q: no owner information", p)
		}
		st = unix.Stat_t{Dev: sys.Dev, Ino: sys.Ino, Nlink: sys.Nlink, Mode: sys.Mode, Uid: sys.Uid, Gid: sys.Gid, Rdev: sys.Rdev, Size: sys.Size}
		return &st, nil
	}
	if err := unix.Fstatat(int(parent.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, fmt.Errorf("tree digest: lstat %q: %w", p, err)
	}
	return &st, nil
}

// detail is the part of an entry's line that says what it holds, which
// differs by type: a file's content sum (or the first path of its hard
// link, so a linked file is summed once and the link itself is recorded),
// a symlink's target, a device's numbers; "-" for the rest.
func (w *walker) detail(p string, parent *os.File, name, typ string, st *unix.Stat_t) (string, error) {
	switch typ {
	case "file":
		key := [2]uint64{st.Dev, st.Ino}
		if first, seen := w.inodes[key]; seen && st.Nlink > 1 {
			return "link=" + strconv.Quote(first), nil
		}
		if st.Nlink > 1 {
			w.inodes[key] = p
		}
		return w.fileSum(p, parent, name, st)
	case "symlink":
		// The root is never a symlink: os.OpenRoot followed it.
		n, err := unix.Readlinkat(int(parent.Fd()), name, w.buf)
		if err != nil {
			return "", fmt.Errorf("tree digest: readlink %q: %w", p, err)
		}
		if n == len(w.buf) {
			return "", fmt.Errorf("tree digest: readlink %q: a target of %d bytes or more", p, n)
		}
		return strconv.Quote(string(w.buf[:n])), nil
	case "char", "block":
		return fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)), nil
	}
	return "-", nil
}

// entryXattrs reads extended attributes by the entry's name in the
// directory opened above it (the root's from its own descriptor), so no
// path is resolved again and a symlink is not followed.
func (w *walker) entryXattrs(parent, dir *os.File, name string) (string, error) {
	if parent == nil {
		fd := int(dir.Fd())
		return w.xattrSum(func(b []byte) (int, error) { return unix.Flistxattr(fd, b) },
			func(a string, b []byte) (int, error) { return unix.Fgetxattr(fd, a, b) })
	}
	at := fmt.Sprintf("/proc/self/fd/%d/%s", parent.Fd(), name)
	return w.xattrSum(func(b []byte) (int, error) { return unix.Llistxattr(at, b) },
		func(a string, b []byte) (int, error) { return unix.Lgetxattr(at, a, b) })
}

// walkChildren descends in sorted order, so the digest does not depend on
// the order the filesystem happens to list a directory in.
func (w *walker) walkChildren(p string, dir *os.File) error {
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("tree digest: reading %q: %w", p, quoted(err))
	}
	slices.Sort(names)
	for _, n := range names {
		if err := w.walk(path.Join(p, n), dir, n); err != nil {
			return err
		}
	}
	return nil
}

// openSame opens p (the root, or name in the directory parent) without
// following a symlink or waiting on a FIFO, and refuses it unless it is the
// very entry st describes: one swapped since it was listed is an error.
func (w *walker) openSame(p string, parent *os.File, name string, st *unix.Stat_t, flags int) (*os.File, error) {
	flags |= os.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	var f *os.File
	if parent == nil {
		var err error
		if f, err = w.root.OpenFile(".", flags, 0); err != nil {
			return nil, fmt.Errorf("tree digest: %q changed while it was read: %w", p, quoted(err))
		}
	} else {
		fd, err := unix.Openat(int(parent.Fd()), name, flags, 0)
		if err != nil {
			return nil, fmt.Errorf("tree digest: %q changed while it was read: %w", p, err)
		}
		f = os.NewFile(uintptr(fd), p)
	}
	var now unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &now); err != nil || now.Dev != st.Dev || now.Ino != st.Ino ||
		flags&unix.O_DIRECTORY == 0 && now.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, fmt.Errorf("tree digest: %q changed while it was read: it is no longer the entry listed", p)
	}
	return f, nil
}

// quoted is err with the path it carries quoted as the listing quotes
// paths: a name in the tree is untrusted, and bare it could pass for lines
// of a message of its own.
func quoted(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s %q: %w", pe.Op, pe.Path, pe.Err)
	}
	return err
}

// fileSum hashes the regular file p, which st describes: no more than its
// size, within what the walk may still read and before its deadline.
func (w *walker) fileSum(p string, parent *os.File, name string, st *unix.Stat_t) (string, error) {
	f, err := w.openSame(p, parent, name, st, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st.Size > w.left {
		return "", fmt.Errorf("tree digest: %q: hashing its %d bytes would pass the %d bytes a walk reads", p, st.Size, w.opts.MaxBytes)
	}
	h := sha256.New()
	buf := w.buf
	var n int64
	for {
		if time.Now().After(w.until) {
			return "", fmt.Errorf("tree digest: the walk ran past its %v while reading %q", w.opts.Timeout, p)
		}
		m, err := f.Read(buf[:min(int64(len(buf)), st.Size-n+1)])
		n += int64(m)
		h.Write(buf[:m])
		if n > st.Size {
			return "", fmt.Errorf("tree digest: %q grew while it was read", p)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("tree digest: reading %q: %w", p, quoted(err))
		}
	}
	if n != st.Size {
		return "", fmt.Errorf("tree digest: %q shrank while it was read", p)
	}
	w.left -= n
	return hex.EncodeToString(h.Sum(nil)), nil
}

// xattrSum hashes the names and values of an entry's extended attributes,
// which list and get read, sorted by name; "" when it has none.
func (w *walker) xattrSum(list func([]byte) (int, error), get func(string, []byte) (int, error)) (string, error) {
	buf := w.xnames
	n, err := list(buf)
	if errors.Is(err, unix.ENOTSUP) || n == 0 {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("listing extended attributes: %w", err)
	}
	var names []string
	for _, a := range strings.Split(string(buf[:n]), "\x00") {
		if a != "" {
			names = append(names, a)
		}
	}
	slices.Sort(names)
	h := sha256.New()
	val := w.xval
	for _, a := range names {
		m, err := get(a, val)
		if err != nil {
			return "", fmt.Errorf("reading extended attribute %q: %w", a, err)
		}
		fmt.Fprintf(h, "%q=%x\n", a, val[:m])
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// typeOf names the file type in a stat's mode.
func typeOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "file"
	case unix.S_IFDIR:
		return "dir"
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFCHR:
		return "char"
	case unix.S_IFBLK:
		return "block"
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFSOCK:
		return "socket"
	}
	return "other"
}

// BuildExcludes are the entries whose contents differ between two builds
// of the same lock for reasons that say nothing about what was installed;
// the builder and `gpuhost tree-digest` leave their contents out (each
// still has its line, so one that appears or goes away still counts). Two
// bakes of one lock showed these and no others, once the build had made
// everything else deterministic (the SBOM, the DKMS signing key, apt's and
// ldconfig's caches):
//
//   - dpkg's, update-alternatives' and apt's logs: a line per package
//     operation of this build's run, stamped with its time. What was
//     installed is in dpkg's database and the manifest, which are hashed.
//     They stay in the image as its record of the build.
//   - DKMS's make.log of each module build, which opens with the time of
//     the build. The module it made is hashed.
var BuildExcludes = []string{
	"/var/log/dpkg.log",
	"/var/log/alternatives.log",
	"/var/log/apt/history.log",
	"/var/log/apt/term.log",
	"/var/lib/dkms/*/*/*/*/log/make.log",
}

// ExcludedSummary lists BuildExcludes for a command's help.
func ExcludedSummary() string {
	if len(BuildExcludes) == 0 {
		return "none"
	}
	return strings.Join(BuildExcludes, ", ")
}
