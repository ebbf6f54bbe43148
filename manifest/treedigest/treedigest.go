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
// Every entry is reached through the root (os.Root: no path leaves it, and
// a symlink is never followed), its extended attributes through the
// directory already open above it, a file is opened without following a
// symlink nor waiting on a FIFO, and what is opened must be what was
// listed: a tree changed under the walk is an error, never a digest.
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
		until: time.Now().Add(o.Timeout), hook: hook}
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

// rel is p as the os.Root takes it.
func rel(p string) string {
	if p == "/" {
		return "."
	}
	return strings.TrimPrefix(p, "/")
}

// walk lists the entry p, called name in the directory parent (nil for the
// root), and what is under it.
func (w *walker) walk(p string, parent *os.File, name string) error {
	if time.Now().After(w.until) {
		return fmt.Errorf("tree digest: the walk ran past its %v at %q", w.opts.Timeout, p)
	}
	fi, err := w.root.Lstat(rel(p))
	if err != nil {
		return fmt.Errorf("tree digest: %w", quoted(err))
	}
	if w.hook != nil {
		w.hook(p)
	}
	typ := typeName(fi.Mode())
	if typ == "file" && w.excluded(p) {
		return w.fn(strconv.Quote(p) + " " + typ + " excluded")
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("tree digest: %q: no owner information", p)
	}
	detail, err := w.detail(p, typ, st)
	if err != nil {
		return err
	}
	var dir *os.File
	if typ == "dir" {
		if dir, err = w.openSame(p, st, unix.O_DIRECTORY); err != nil {
			return err
		}
		defer dir.Close()
	}
	line := fmt.Sprintf("%s %s %04o %d:%d %s", strconv.Quote(p), typ, modeBits(fi.Mode()), st.Uid, st.Gid, detail)
	x, err := entryXattrs(parent, dir, name)
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

// detail is the part of an entry's line that says what it holds, which
// differs by type: a file's content sum (or the first path of its hard
// link, so a linked file is summed once and the link itself is recorded),
// a symlink's target, a device's numbers; "-" for the rest.
func (w *walker) detail(p, typ string, st *syscall.Stat_t) (string, error) {
	switch typ {
	case "file":
		key := [2]uint64{st.Dev, st.Ino}
		if first, seen := w.inodes[key]; seen && st.Nlink > 1 {
			return "link=" + strconv.Quote(first), nil
		}
		if st.Nlink > 1 {
			w.inodes[key] = p
		}
		return w.fileSum(p, st)
	case "symlink":
		target, err := w.root.Readlink(rel(p))
		if err != nil {
			return "", fmt.Errorf("tree digest: %w", quoted(err))
		}
		return strconv.Quote(target), nil
	case "char", "block":
		return fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)), nil
	}
	return "-", nil
}

// entryXattrs reads extended attributes by the entry's name in the
// directory opened above it (the root's from its own descriptor), so no
// path is resolved again and a symlink is not followed.
func entryXattrs(parent, dir *os.File, name string) (string, error) {
	if parent == nil {
		fd := int(dir.Fd())
		return xattrSum(func(b []byte) (int, error) { return unix.Flistxattr(fd, b) },
			func(a string, b []byte) (int, error) { return unix.Fgetxattr(fd, a, b) })
	}
	at := fmt.Sprintf("/proc/self/fd/%d/%s", parent.Fd(), name)
	return xattrSum(func(b []byte) (int, error) { return unix.Llistxattr(at, b) },
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

// openSame opens p through the root without following a symlink or
// waiting on a FIFO, and refuses it unless it is the very entry st
// describes: one swapped since it was listed is an error.
func (w *walker) openSame(p string, st *syscall.Stat_t, flags int) (*os.File, error) {
	f, err := w.root.OpenFile(rel(p), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|flags, 0)
	if err != nil {
		return nil, fmt.Errorf("tree digest: %q changed while it was read: %w", p, quoted(err))
	}
	fi, err := f.Stat()
	var now *syscall.Stat_t
	if err == nil {
		now, _ = fi.Sys().(*syscall.Stat_t)
	}
	if now == nil || now.Dev != st.Dev || now.Ino != st.Ino || flags == 0 && !fi.Mode().IsRegular() {
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
func (w *walker) fileSum(p string, st *syscall.Stat_t) (string, error) {
	f, err := w.openSame(p, st, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st.Size > w.left {
		return "", fmt.Errorf("tree digest: %q: hashing its %d bytes would pass the %d bytes a walk reads", p, st.Size, w.opts.MaxBytes)
	}
	h := sha256.New()
	buf := make([]byte, 1<<20)
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
func xattrSum(list func([]byte) (int, error), get func(string, []byte) (int, error)) (string, error) {
	buf := make([]byte, maxXattrs)
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
	val := make([]byte, maxXattrs)
	for _, a := range names {
		m, err := get(a, val)
		if err != nil {
			return "", fmt.Errorf("reading extended attribute %q: %w", a, err)
		}
		fmt.Fprintf(h, "%q=%x\n", a, val[:m])
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func typeName(m fs.FileMode) string {
	switch m.Type() {
	case 0:
		return "file"
	case fs.ModeDir:
		return "dir"
	case fs.ModeSymlink:
		return "symlink"
	case fs.ModeDevice | fs.ModeCharDevice:
		return "char"
	case fs.ModeDevice:
		return "block"
	case fs.ModeNamedPipe:
		return "fifo"
	case fs.ModeSocket:
		return "socket"
	}
	return "other"
}

// modeBits is the Unix permission and set-id bits of m.
func modeBits(m fs.FileMode) uint32 {
	b := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		b |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		b |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		b |= 0o1000
	}
	return b
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
