package files

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/diskfs/go-diskfs/filesystem/ext4"
)

// inode is what the checks read of one entry, as lstat gives it.
type inode struct {
	typ      string
	mode     string
	uid, gid int
	// dev is the device the entry is on; hasDev says whether the tree
	// gives one (a disk image's files have none: they are all on the
	// image's own filesystem).
	dev    uint64
	hasDev bool
}

// errNoOwner is what a tree that keeps no owners gives: nothing about it
// could be judged.
var errNoOwner = errors.New("the tree does not say who owns its files")

// inodeOf reads info: the host's stat for a tree on disk, the inode for a
// file inside a disk image.
func inodeOf(name string, info fs.FileInfo) (inode, error) {
	in := inode{typ: typeOf(info.Mode()), mode: octal(info.Mode())}
	switch st := info.Sys().(type) {
	case *syscall.Stat_t:
		in.uid, in.gid, in.dev, in.hasDev = int(st.Uid), int(st.Gid), uint64(st.Dev), true
	case *ext4.StatT:
		in.uid, in.gid = int(st.UID), int(st.GID)
	default:
		return inode{}, fmt.Errorf("reading %s: %w", name, errNoOwner)
	}
	return in, nil
}

// typeOf names a file type as the facts do.
func typeOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

// octal writes a mode as chmod takes it: four octal digits, the special
// bits first. fs.FileMode keeps those bits apart from the permissions.
func octal(m fs.FileMode) string {
	v := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		v |= 0o1000
	}
	return fmt.Sprintf("%04o", v)
}
