package files

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// maxWalkEntries bounds the entries one walk sees. A GPU image holds
	// a few hundred thousand; a host with container layers some
	// millions. Past it the walk stops and says so.
	maxWalkEntries = 5_000_000
	// maxWalkDepth bounds how deep the walk goes, and so the directories
	// it holds open; deeper directories are listed as unread.
	maxWalkDepth = 256
	// maxSample bounds each list of paths kept; maxOwnerPaths the paths
	// kept per owner, and maxAllOwnerPaths for all owners together (a
	// crafted tree of a thousand uids would otherwise keep twenty paths
	// of each); maxOwners how many owners are counted.
	maxSample        = 1000
	maxOwnerPaths    = 20
	maxAllOwnerPaths = 10000
	maxOwners        = 65536
	// maxUnread and maxSkipped bound those lists: past them one more
	// says nothing new.
	maxUnread  = 100
	maxSkipped = 1000
)

// walker is one walk of a tree.
type walker struct {
	ctx   context.Context
	skip  mountSkip
	limit int
	// rootDev is the tree's own device, when the tree gives devices and
	// the walk must not leave it (an offline tree).
	rootDev uint64
	stayOn  bool
	out     facts.FileWalk
	owners  map[int]*facts.FileOwner
	// ownerPaths counts the paths kept in owners.
	ownerPaths int
}

// errStop ends a walk that has said why in Stopped.
var errStop = errors.New("walk stopped")

// walk reads the whole tree from its root, depth first in name order,
// within limit entries. It stops early, saying why, on the limit or when
// ctx ends; a directory it cannot list is named in Unread. Either leaves
// Complete false. Its error is for a tree that cannot be judged at all.
func walk(ctx context.Context, fsys sysroot.FS, skip mountSkip, limit int) (facts.FileWalk, error) {
	w := &walker{ctx: ctx, skip: skip, limit: limit, owners: map[int]*facts.FileOwner{}}
	w.out = facts.FileWalk{Limit: limit, Unread: []string{}, Skipped: []facts.SkippedMount{},
		WorldWritableDirs: facts.PathSample{Paths: []string{}}, WorldWritableFiles: facts.PathSample{Paths: []string{}},
		Owners: []facts.FileOwner{}}
	info, err := fsys.Lstat("/")
	if err != nil {
		return w.out, fmt.Errorf("reading the tree's root: %w", err)
	}
	root, err := inodeOf("/", info)
	if err != nil {
		return w.out, err
	}
	w.rootDev, w.stayOn = root.dev, root.hasDev && !skip.live
	w.directory("/", root)
	d, err := sysroot.OpenDir(fsys, "/")
	if err != nil {
		return w.out, fmt.Errorf("reading the tree's root: %w", err)
	}
	defer d.Close()
	if err := w.dir(d, 0); err != nil && !errors.Is(err, errStop) {
		return w.out, err
	}
	for _, o := range w.owners {
		w.out.Owners = append(w.out.Owners, *o)
	}
	slices.SortFunc(w.out.Owners, func(a, b facts.FileOwner) int { return cmp.Compare(a.UID, b.UID) })
	w.out.Complete = w.out.Stopped == "" && len(w.out.Unread) == 0
	return w.out, nil
}

// subdir is a directory to walk into once its parent is read.
type subdir struct {
	name string
	info fs.FileInfo
}

// dir reads one directory, then walks the directories in it, each opened
// from it.
func (w *walker) dir(d sysroot.Dir, depth int) error {
	if err := w.ctx.Err(); err != nil {
		w.out.Stopped = fmt.Sprintf("stopped after %d entries: %v", w.out.Entries, context.Cause(w.ctx))
		w.out.StoppedAt = d.Name()
		return errStop
	}
	entries, err := d.ReadDir()
	if err != nil {
		w.unread(d.Name(), err)
		return nil
	}
	var subdirs []subdir
	for _, e := range entries {
		if w.out.Entries++; w.out.Entries > w.limit {
			w.out.Entries--
			w.out.Stopped = fmt.Sprintf("stopped at its limit of %d entries", w.limit)
			w.out.StoppedAt = d.Name()
			return errStop
		}
		name := join(d.Name(), e.Name())
		info, err := e.Info()
		if err != nil {
			w.unread(name, err)
			continue
		}
		in, err := inodeOf(name, info)
		if err != nil {
			return err
		}
		if in.typ != "directory" {
			w.file(name, in)
			continue
		}
		w.directory(name, in)
		if w.enter(name, in) {
			subdirs = append(subdirs, subdir{name: e.Name(), info: info})
		}
	}
	// Below this point only the directories' names and lstats are held
	// while the walk goes down, not the whole listing.
	for _, s := range subdirs {
		if err := w.sub(d, s, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// sub walks the directory s of d.
func (w *walker) sub(d sysroot.Dir, s subdir, depth int) error {
	name := join(d.Name(), s.name)
	if depth > maxWalkDepth {
		w.unread(name, fmt.Errorf("deeper than %d directories", maxWalkDepth))
		return nil
	}
	child, err := d.OpenDir(s.name, s.info)
	if err != nil {
		w.unread(name, err)
		return nil
	}
	defer child.Close()
	return w.dir(child, depth)
}

// directory notes a directory anyone may write without the sticky bit,
// which lets each writer delete the others' files.
func (w *walker) directory(name string, in inode) {
	if worldWritable(in.mode) && !sticky(in.mode) {
		sample(&w.out.WorldWritableDirs, name)
	}
}

// file notes a world-writable regular file and counts the entry by its
// owner: OVAL's filename patterns collect every entry but directories.
func (w *walker) file(name string, in inode) {
	if in.typ == "regular" && worldWritable(in.mode) {
		sample(&w.out.WorldWritableFiles, name)
	}
	o, ok := w.owners[in.uid]
	if !ok {
		if len(w.owners) >= maxOwners {
			w.unread(name, fmt.Errorf("more than %d owners", maxOwners))
			return
		}
		o = &facts.FileOwner{UID: in.uid, Paths: []string{}}
		w.owners[in.uid] = o
	}
	o.Count++
	if len(o.Paths) < maxOwnerPaths && w.ownerPaths < maxAllOwnerPaths {
		o.Paths = append(o.Paths, name)
		w.ownerPaths++
	}
}

// enter says whether to walk into a directory: not into a filesystem the
// walk leaves alone, which it records.
func (w *walker) enter(name string, in inode) bool {
	if m, ok := w.skip.points[name]; ok {
		w.skipped(m)
		return false
	}
	if w.stayOn && in.hasDev && in.dev != w.rootDev {
		w.skipped(facts.SkippedMount{Path: name, Reason: "another filesystem mounted inside the tree, not part of it"})
		return false
	}
	return true
}

func (w *walker) skipped(m facts.SkippedMount) {
	if len(w.out.Skipped) < maxSkipped {
		w.out.Skipped = append(w.out.Skipped, m)
	}
}

func (w *walker) unread(name string, err error) {
	if len(w.out.Unread) < maxUnread {
		w.out.Unread = append(w.out.Unread, fmt.Sprintf("%s: %v", name, err))
	} else if w.out.Stopped == "" {
		// Past the bound the list says no more, but the walk must not
		// look complete on what it does not show.
		w.out.Stopped = fmt.Sprintf("more than %d entries could not be read", maxUnread)
	}
}

// worldWritable says others may write: the last octal digit has 2.
func worldWritable(mode string) bool { return (mode[3]-'0')&2 != 0 }

// sticky says the sticky bit is set: the first octal digit has 1.
func sticky(mode string) bool { return (mode[0]-'0')&1 != 0 }

func sample(s *facts.PathSample, name string) {
	s.Count++
	if len(s.Paths) < maxSample {
		s.Paths = append(s.Paths, name)
	}
}
