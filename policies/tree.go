package policies

import (
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"
)

// tree is the pack as one read-only tree: the folders under policies/
// and, at a domain's folder name, the checks that sit in the domain's
// folder beside its facts and collector. What reads the pack (the engine,
// bundles, lint, the catalog) walks one tree and names every file by its
// path in it, whichever folder of the repository holds it.
type tree struct {
	own    fs.FS
	mounts map[string]fs.FS
}

// Open opens name in the folder that holds it.
func (t tree) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		f, err := t.own.Open(".")
		if err != nil {
			return nil, err
		}
		return &rootDir{File: f, t: t}, nil
	}
	top, rest, _ := strings.Cut(name, "/")
	m, ok := t.mounts[top]
	if !ok {
		return t.own.Open(name)
	}
	if rest == "" {
		rest = "."
	}
	f, err := m.Open(rest)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if rest == "." {
		return &mountDir{File: f, name: top}, nil
	}
	return f, nil
}

// mountDir is a mounted folder's root, named as the pack names it.
type mountDir struct {
	fs.File
	name string
}

func (d *mountDir) Stat() (fs.FileInfo, error) {
	fi, err := d.File.Stat()
	if err != nil {
		return nil, err
	}
	return renamed{fi, d.name}, nil
}

func (d *mountDir) ReadDir(n int) ([]fs.DirEntry, error) {
	rd, ok := d.File.(fs.ReadDirFile)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: d.name, Err: errors.New("not a directory")}
	}
	return rd.ReadDir(n)
}

// renamed is a FileInfo under another name.
type renamed struct {
	fs.FileInfo
	name string
}

func (r renamed) Name() string { return r.name }

// rootDir is the pack's root: policies' own folders and files, and the
// mounted folders among them in name order.
type rootDir struct {
	fs.File
	t       tree
	entries []fs.DirEntry
	read    bool
}

func (d *rootDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if !d.read {
		own, err := fs.ReadDir(d.t.own, ".")
		if err != nil {
			return nil, err
		}
		for name, m := range d.t.mounts {
			fi, err := fs.Stat(m, ".")
			if err != nil {
				return nil, err
			}
			own = append(own, fs.FileInfoToDirEntry(renamed{fi, name}))
		}
		slices.SortFunc(own, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		d.entries, d.read = own, true
	}
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	k := min(n, len(d.entries))
	out := d.entries[:k]
	d.entries = d.entries[k:]
	return out, nil
}
