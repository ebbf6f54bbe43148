package files

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// minInteractiveID is where ComplianceAsCode's interactive users
	// begin: its OVAL compares uid (or gid) >= 1000, whatever
	// /etc/login.defs says.
	minInteractiveID = 1000
	// maxHomeEntries bounds the entries listed in homes and /home, all
	// together; maxDotFiles the dot files kept. Past either the facts
	// say they are incomplete.
	maxHomeEntries = 200000
	maxDotFiles    = 10000
	// trustNames are the files that let rsh, rlogin or ftp in without a
	// password.
	netrc, rhosts = ".netrc", ".rhosts"
)

// homeReader reads homes and trust files within one budget of entries.
type homeReader struct {
	fsys    sysroot.FS
	entries int
	f       *facts.Files
}

// readHomes fills Homes, DotFiles and TrustFiles of f. A directory that
// cannot be listed or a bound reached leaves HomesIncomplete saying so;
// the checks then cannot pass.
func readHomes(ctx context.Context, fsys sysroot.FS, users []facts.Account, f *facts.Files) error {
	r := &homeReader{fsys: fsys, f: f}
	f.Homes, f.DotFiles, f.TrustFiles = []facts.HomeDir{}, []facts.DotFile{}, []string{}
	seen := map[string]bool{}
	for _, u := range users {
		if u.UID < minInteractiveID && u.GID < minInteractiveID {
			continue
		}
		if err := ctx.Err(); err != nil {
			f.HomesIncomplete = "stopped: " + context.Cause(ctx).Error()
			return nil
		}
		h, err := r.home(u)
		if err != nil {
			return err
		}
		f.Homes = append(f.Homes, h)
		// Once something is missed the dot files cannot pass; the
		// homes themselves are still worth reading.
		if h.IsDir && !seen[h.Path] && f.HomesIncomplete == "" {
			seen[h.Path] = true
			r.dotFiles(h.Path)
		}
	}
	r.trustFiles()
	return nil
}

// home reads one account's home as OpenSCAP's items see it: the path
// itself (a symlink as a symlink), and whether it leads to a directory.
func (r *homeReader) home(u facts.Account) (facts.HomeDir, error) {
	h := facts.HomeDir{User: u.Name, UID: u.UID, GID: u.GID, Path: u.Home, Type: "missing"}
	// A relative or empty home names nothing: read as a path, it would
	// be the tree's root.
	if !path.IsAbs(u.Home) {
		return h, nil
	}
	info, err := r.fsys.Lstat(u.Home)
	if sysroot.IsNotExist(err) {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("reading %s: %w", u.Home, err)
	}
	in, err := inodeOf(u.Home, info)
	if err != nil {
		return h, err
	}
	h.Type, h.Mode = in.typ, in.mode
	if st, err := r.fsys.Stat(u.Home); err == nil {
		h.IsDir = st.IsDir()
	} else if !sysroot.IsNotExist(err) {
		return h, fmt.Errorf("reading %s: %w", u.Home, err)
	}
	return h, nil
}

// list reads a directory within the budget, or says why it could not
// and returns false.
func (r *homeReader) list(dir string) ([]fs.DirEntry, bool) {
	entries, err := r.fsys.ReadDir(dir)
	if err != nil {
		r.f.HomesIncomplete = fmt.Sprintf("listing %s: %v", dir, err)
		return nil, false
	}
	if r.entries += len(entries); r.entries > maxHomeEntries {
		r.f.HomesIncomplete = fmt.Sprintf("more than %d entries in the home directories", maxHomeEntries)
		return nil, false
	}
	return entries, true
}

// dotFiles lists the dot files of home and of the directories directly
// below it (not through a symlink: OVAL recurses into directories only).
// It returns false once something is missed.
func (r *homeReader) dotFiles(home string) bool {
	entries, ok := r.list(home)
	if !ok {
		return false
	}
	for _, e := range entries {
		p := join(home, e.Name())
		if e.IsDir() {
			sub, ok := r.list(p)
			if !ok {
				return false
			}
			for _, s := range sub {
				if !r.dotFile(home, join(p, s.Name()), s) {
					return false
				}
			}
			continue
		}
		if !r.dotFile(home, p, e) {
			return false
		}
	}
	return true
}

// dotFile records e, at p, when it is a dot file.
func (r *homeReader) dotFile(home, p string, e fs.DirEntry) bool {
	if e.IsDir() || !strings.HasPrefix(e.Name(), ".") {
		return true
	}
	if len(r.f.DotFiles) >= maxDotFiles {
		r.f.HomesIncomplete = fmt.Sprintf("more than %d dot files in the home directories", maxDotFiles)
		return false
	}
	info, err := e.Info()
	if err != nil {
		r.f.HomesIncomplete = fmt.Sprintf("reading %s: %v", p, err)
		return false
	}
	in, err := inodeOf(p, info)
	if err != nil {
		r.f.HomesIncomplete = err.Error()
		return false
	}
	r.f.DotFiles = append(r.f.DotFiles, facts.DotFile{Path: p, Home: home, Type: in.typ, UID: in.uid, GID: in.gid})
	return true
}

// trustFiles finds .rhosts in /root, .rhosts and .netrc in /home and the
// directories directly below it, and /etc/hosts.equiv: where
// ComplianceAsCode's no_rsh_trust_files and no_netrc_files look.
func (r *homeReader) trustFiles() {
	for _, p := range []string{"/root/" + rhosts, "/etc/hosts.equiv"} {
		if info, err := r.fsys.Lstat(p); err == nil && !info.IsDir() {
			r.f.TrustFiles = append(r.f.TrustFiles, p)
		} else if err != nil && !sysroot.IsNotExist(err) {
			r.f.HomesIncomplete = fmt.Sprintf("reading %s: %v", p, err)
			return
		}
	}
	if info, err := r.fsys.Stat("/home"); err != nil || !info.IsDir() {
		if err != nil && !sysroot.IsNotExist(err) {
			r.f.HomesIncomplete = fmt.Sprintf("reading /home: %v", err)
		}
		return
	}
	entries, ok := r.list("/home")
	if !ok {
		return
	}
	for _, e := range entries {
		p := join("/home", e.Name())
		if !e.IsDir() {
			r.trustFile(p, e)
			continue
		}
		sub, ok := r.list(p)
		if !ok {
			return
		}
		for _, s := range sub {
			if !s.IsDir() {
				r.trustFile(join(p, s.Name()), s)
			}
		}
	}
}

func (r *homeReader) trustFile(p string, e fs.DirEntry) {
	if e.Name() == netrc || e.Name() == rhosts {
		r.f.TrustFiles = append(r.f.TrustFiles, p)
	}
}
