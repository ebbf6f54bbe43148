package files

import (
	"fmt"
	"path"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/mounttab"
)

// mountSkip is where a walk of a live host does not go.
type mountSkip struct {
	live bool
	// points maps a mount point, as the tree names it, to why it is
	// left alone.
	points map[string]facts.SkippedMount
}

// pseudoFS are the kernel's interfaces mounted as filesystems: they hold
// no one's files, and /proc alone would be thousands of entries per
// process. OpenSCAP leaves proc and sysfs out of "local"; the rest are
// of their kind.
var pseudoFS = map[string]bool{
	"proc": true, "sysfs": true, "devpts": true, "cgroup": true, "cgroup2": true, "securityfs": true,
	"debugfs": true, "tracefs": true, "pstore": true, "bpf": true, "configfs": true, "fusectl": true,
	"efivarfs": true, "binfmt_misc": true, "selinuxfs": true, "nsfs": true, "mqueue": true,
	"rpc_pipefs": true,
}

// networkFS are the filesystems OpenSCAP counts as remote (its fsdev.c,
// after systemd's fstype_is_network), a "fuse." prefix aside; autofs is
// the map of one, mounted for real elsewhere when used.
var networkFS = map[string]bool{
	"afs": true, "auristorfs": true, "ceph": true, "cifs": true, "smb3": true, "smbfs": true, "sshfs": true,
	"ncpfs": true, "ncp": true, "nfs": true, "nfs4": true, "gfs": true, "gfs2": true, "glusterfs": true,
	"gpfs": true, "pvfs2": true, "ocfs2": true, "lustre": true, "davfs": true, "autofs": true,
}

// maxMountinfo bounds /proc/self/mountinfo: a host with thousands of
// container mounts writes some megabytes.
const maxMountinfo = 16 << 20

// skippedMounts is, on a live host, every mount point of a pseudo or a
// network filesystem. An offline tree has no mounts of its own: its walk
// stays on the tree's filesystem instead.
func skippedMounts(env *collect.Env) (mountSkip, error) {
	if !env.Live {
		return mountSkip{}, nil
	}
	const mi = "/proc/self/mountinfo"
	data, err := env.FS.ReadFileLimit(mi, maxMountinfo)
	if err != nil {
		return mountSkip{}, fmt.Errorf("reading mounts: %w", err)
	}
	mounts, err := mounttab.ParseMountinfo(data)
	if err != nil {
		return mountSkip{}, fmt.Errorf("parsing %s: %w", env.FS.Display(mi), err)
	}
	s := mountSkip{live: true, points: map[string]facts.SkippedMount{}}
	for _, m := range mounts {
		p, ok := inTree(env.FS.Root(), m.Point)
		if !ok {
			continue
		}
		// A later line is mounted over an earlier one at the same point.
		delete(s.points, p)
		if why := skipReason(m.FSType); why != "" {
			s.points[p] = facts.SkippedMount{Path: p, FSType: m.FSType, Reason: why}
		}
	}
	return s, nil
}

// skipReason says why a walk leaves a filesystem type alone, or "".
func skipReason(fstype string) string {
	switch t := strings.TrimPrefix(fstype, "fuse."); {
	case pseudoFS[t]:
		return "a pseudo filesystem: the kernel's interface, no one's files"
	case networkFS[t]:
		return "a network filesystem: not local, as OpenSCAP's walk is"
	}
	return ""
}

// inTree names a mount point of the scanner's own mount table as the tree
// names it. A host tree read from elsewhere (/host in a container) has its
// mounts under that directory.
func inTree(root, point string) (string, bool) {
	root, point = path.Clean(root), path.Clean(point)
	if root == "/" {
		return point, true
	}
	if point == root {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(point, root+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}
