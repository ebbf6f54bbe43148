package access

import (
	"io/fs"
	"syscall"

	"github.com/diskfs/go-diskfs/filesystem/ext4"
)

// ownerGID is the group that owns a file: from the host's stat for a
// tree on disk, from the inode for a file inside a disk image.
func ownerGID(info fs.FileInfo) int {
	switch st := info.Sys().(type) {
	case *syscall.Stat_t:
		return int(st.Gid)
	case *ext4.StatT:
		return int(st.GID)
	}
	return 0
}
