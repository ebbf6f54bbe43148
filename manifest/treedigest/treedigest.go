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
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Prefix is what a digest starts with.
const Prefix = "sha256:"

// maxXattrs bounds the extended attributes read from one entry.
const maxXattrs = 64 << 10

// Options change what a walk hashes.
type Options struct {
	// Exclude are entries whose content is not hashed, as paths inside the
	// tree ("/var/log/dpkg.log") or path.Match patterns ("/var/log/apt/*").
	// An excluded entry still has its line, with its path and type and the
	// word "excluded", so that nothing is left out unseen; a directory's
	// entries are then not walked.
	Exclude []string
}

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
func Walk(root string, o Options, fn func(line string) error) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("tree digest: %w", quoted(err))
	}
	defer r.Close()
	w := &walker{root: r, dir: root, opts: o, fn: fn, inodes: map[[2]uint64]string{}}
	return w.walk("/")
}

type walker struct {
	root   *os.Root
	dir    string
	opts   Options
	fn     func(string) error
	inodes map[[2]uint64]string
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

func (w *walker) walk(p string) error {
	fi, err := w.root.Lstat(rel(p))
	if err != nil {
		return fmt.Errorf("tree digest: %w", quoted(err))
	}
	typ := typeName(fi.Mode())
	if w.excluded(p) {
		return w.fn(strconv.Quote(p) + " " + typ + " excluded")
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("tree digest: %q: no owner information", p)
	}
	detail := "-"
	switch typ {
	case "file":
		key := [2]uint64{st.Dev, st.Ino}
		if first, seen := w.inodes[key]; seen && st.Nlink > 1 {
			detail = "link=" + strconv.Quote(first)
			break
		}
		if st.Nlink > 1 {
			w.inodes[key] = p
		}
		if detail, err = w.fileSum(p); err != nil {
			return err
		}
	case "symlink":
		target, err := w.root.Readlink(rel(p))
		if err != nil {
			return fmt.Errorf("tree digest: %w", quoted(err))
		}
		detail = strconv.Quote(target)
	case "char", "block":
		detail = fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	line := fmt.Sprintf("%s %s %04o %d:%d %s", strconv.Quote(p), typ, modeBits(fi.Mode()), st.Uid, st.Gid, detail)
	x, err := xattrSum(filepath.Join(w.dir, rel(p)))
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
	d, err := w.root.Open(rel(p))
	if err != nil {
		return fmt.Errorf("tree digest: %w", quoted(err))
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("tree digest: reading %q: %w", p, quoted(err))
	}
	slices.Sort(names)
	for _, n := range names {
		if err := w.walk(path.Join(p, n)); err != nil {
			return err
		}
	}
	return nil
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

func (w *walker) fileSum(p string) (string, error) {
	f, err := w.root.Open(rel(p))
	if err != nil {
		return "", fmt.Errorf("tree digest: %w", quoted(err))
	}
	defer f.Close()
	// Opened after Lstat said regular; a file swapped for something else
	// meanwhile is refused rather than read.
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("tree digest: %q is no longer a regular file", p)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("tree digest: reading %q: %w", p, quoted(err))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// xattrSum hashes the names and values of the entry's extended attributes,
// sorted by name; "" when it has none. The walk never follows a symlink.
func xattrSum(name string) (string, error) {
	buf := make([]byte, maxXattrs)
	n, err := unix.Llistxattr(name, buf)
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
		m, err := unix.Lgetxattr(name, a, val)
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
