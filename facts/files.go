package facts

// Files is what CIS asks of the files themselves, read as
// ComplianceAsCode's OVAL reads them for OpenSCAP: the owner, group and
// mode of the files the benchmark names, the home directories of the
// accounts with ids from 1000 up and the dot files in them, the trust
// files of rsh and ftp, and a walk of the tree's local filesystems for
// world-writable entries and the owners of every file.
type Files struct {
	// Benchmark holds each file the benchmark names, in the collector's
	// order, found or not; a glob's matches (/etc/ssh/*_key) one entry
	// each, and none when nothing matches.
	Benchmark []BenchmarkFile `json:"benchmark"`
	// Patterns are the paths and globs Benchmark was read for, so that a
	// check can tell a path no one reads from one that is absent.
	Patterns []string `json:"patterns"`
	// Homes holds one entry per account whose uid or gid is 1000 or
	// more, in /etc/passwd's order: the accounts the interactive users'
	// rules choose from (OpenSCAP's filters are uid >= 1000, or gid >=
	// 1000 for the group rule, and not nobody).
	Homes []HomeDir `json:"homes"`
	// DotFiles are the entries that are not directories, named with a
	// leading dot, in each of Homes' directories and in the directories
	// directly below it (OpenSCAP's max_depth 1): each home read once.
	DotFiles []DotFile `json:"dot_files"`
	// TrustFiles are the files that let a remote login in without a
	// password: .rhosts in /root, .rhosts and .netrc in /home and the
	// directories directly below it, and /etc/hosts.equiv.
	TrustFiles []string `json:"trust_files"`
	// HomesIncomplete says why Homes, DotFiles or TrustFiles may lack
	// something (a directory that could not be listed, a bound reached);
	// empty when they were read whole.
	HomesIncomplete string `json:"homes_incomplete,omitempty"`
	// Walk is what a walk of the whole tree found.
	Walk FileWalk `json:"walk"`
}

// BenchmarkFile is one file the benchmark names, as lstat sees it: a
// final symlink is not followed (OpenSCAP's rules leave symlinks out).
type BenchmarkFile struct {
	// Path is the file in the target.
	Path string `json:"path"`
	// Pattern is the entry of the collector's list that named it: Path
	// itself, or the glob it matched.
	Pattern string `json:"pattern"`
	// Directory says the benchmark names a directory here (the cron
	// directories): anything else at the path is no item OpenSCAP
	// collects, and no check judges it.
	Directory bool `json:"directory"`
	// Type is what is at Path.
	Type string `json:"type" jsonschema:"enum=regular,enum=directory,enum=symlink,enum=other,enum=missing"`
	// UID and GID own it; Owner and Group are their names in
	// /etc/passwd and /etc/group, empty when those name none.
	UID   int    `json:"uid" jsonschema:"minimum=0"`
	GID   int    `json:"gid" jsonschema:"minimum=0"`
	Owner string `json:"owner,omitempty"`
	Group string `json:"group,omitempty"`
	// Mode is the permission bits with setuid, setgid and sticky, four
	// octal digits as chmod takes them; empty when the file is missing.
	Mode string `json:"mode,omitempty" jsonschema:"pattern=^[0-7]{4}$"`
}

// HomeDir is an account's home directory as /etc/passwd gives it.
type HomeDir struct {
	// User, UID and GID are the account's.
	User string `json:"user"`
	UID  int    `json:"uid" jsonschema:"minimum=0"`
	GID  int    `json:"gid" jsonschema:"minimum=0"`
	// Path is the home directory.
	Path string `json:"path"`
	// Type is what is at Path, a final symlink not followed: OpenSCAP's
	// item for a home that is a symlink is the link.
	Type string `json:"type" jsonschema:"enum=regular,enum=directory,enum=symlink,enum=other,enum=missing"`
	// IsDir says Path leads to a directory, its symlinks followed inside
	// the target: whether the home exists.
	IsDir bool `json:"is_dir"`
	// Mode is what is at Path's mode, as BenchmarkFile's; empty when
	// missing.
	Mode string `json:"mode,omitempty" jsonschema:"pattern=^[0-7]{4}$"`
}

// DotFile is an entry named with a leading dot in a home directory, or in
// a directory directly below one, that is not itself a directory.
type DotFile struct {
	// Path is the entry, below Home as /etc/passwd names it.
	Path string `json:"path"`
	// Home is the HomeDir path it was found under.
	Home string `json:"home"`
	// Type is the entry's own: a symlink is not followed.
	Type string `json:"type" jsonschema:"enum=regular,enum=symlink,enum=other"`
	UID  int    `json:"uid" jsonschema:"minimum=0"`
	GID  int    `json:"gid" jsonschema:"minimum=0"`
}

// FileWalk is a walk of the tree from its root. It stays on the target's
// local filesystems as OpenSCAP's recurse_file_system="local" does: on a
// live host it does not enter pseudo filesystems (proc, sysfs, cgroup and
// their kind) nor network ones (nfs, cifs, ceph and their kind); in a tree
// or an image it does not leave the tree's own filesystem. It follows no
// symlink.
type FileWalk struct {
	// Complete says the walk saw every entry it should have. When it is
	// false, Stopped or Unread say what it missed: a check that needs
	// the whole tree cannot pass on it.
	Complete bool `json:"complete"`
	// Stopped says why the walk ended early (its entry limit, the scan's
	// deadline); empty when it did not. StoppedAt is the directory it was
	// in: it saw every entry before that directory's remaining entries in
	// its order (depth first, by name), and none after.
	Stopped   string `json:"stopped,omitempty"`
	StoppedAt string `json:"stopped_at,omitempty"`
	// Entries counts the entries seen; Limit is the most it may see.
	Entries int `json:"entries" jsonschema:"minimum=0"`
	Limit   int `json:"limit" jsonschema:"minimum=0"`
	// Unread lists directories the walk could not list, each with why.
	Unread []string `json:"unread"`
	// Skipped lists the mount points not entered, each with why.
	Skipped []SkippedMount `json:"skipped"`
	// WorldWritableDirs are directories anyone may write that lack the
	// sticky bit.
	WorldWritableDirs PathSample `json:"world_writable_dirs"`
	// WorldWritableFiles are regular files anyone may write.
	WorldWritableFiles PathSample `json:"world_writable_files"`
	// Owners counts the entries that are not directories by the uid
	// that owns them, in uid order.
	Owners []FileOwner `json:"owners"`
}

// PathSample is what a walk found of one kind: how many, and the first of
// them in the walk's order (sorted by name, depth first), up to a bound.
type PathSample struct {
	Count int      `json:"count" jsonschema:"minimum=0"`
	Paths []string `json:"paths"`
}

// FileOwner is how many entries one uid owns, and the first of them: up
// to 20 for each uid and 10,000 for all together.
type FileOwner struct {
	UID   int      `json:"uid" jsonschema:"minimum=0"`
	Count int      `json:"count" jsonschema:"minimum=0"`
	Paths []string `json:"paths"`
}

// SkippedMount is a mount point a walk did not enter.
type SkippedMount struct {
	Path string `json:"path"`
	// FSType is the filesystem mounted there, when known.
	FSType string `json:"fs_type,omitempty"`
	Reason string `json:"reason"`
}
