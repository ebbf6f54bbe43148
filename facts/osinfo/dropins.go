package osinfo

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// maxDropInFiles bounds the files one drop-in scheme (modprobe.d, sysctl.d,
// limits.d) may make a collector read: real systems have dozens.
const maxDropInFiles = 1024

// maxDropInFile bounds one such file; real ones are a few kilobytes.
const maxDropInFile = 1 << 20

// dropIn is one file of a drop-in directory scheme.
type dropIn struct {
	// name is where the file is read.
	name string
	// display is the file its lines are shown in: the target of a link
	// (Debian's /etc/sysctl.d/99-sysctl.conf shows as /etc/sysctl.conf),
	// which is the file a fix edits.
	display string
	// masked says the file is a link to /dev/null: it hides the same
	// name in later directories and holds nothing.
	masked bool
}

// dropIns lists the files whose names end in suffix in dirs, ordered by
// file name, a name in an earlier directory hiding the same name in a later
// one: the scheme modprobe.d(5) and sysctl.d(5) share (kmod's and systemd's
// conf_files_list). Hidden files and directories are passed over.
func dropIns(fsys sysroot.FS, dirs []string, suffix string) ([]dropIn, error) {
	byName := map[string]dropIn{}
	for _, dir := range dirs {
		entries, err := fsys.ReadDir(dir)
		if err != nil {
			if sysroot.IsNotExist(err) {
				continue
			}
			return nil, fmt.Errorf("listing %s: %w", fsys.Display(dir), err)
		}
		for _, e := range entries {
			n := e.Name()
			if !strings.HasSuffix(n, suffix) || strings.HasPrefix(n, ".") {
				continue
			}
			if _, hidden := byName[n]; hidden {
				continue
			}
			d, ok := dropInEntry(fsys, dir, e)
			if !ok {
				continue
			}
			if len(byName) == maxDropInFiles {
				return nil, fmt.Errorf("listing %s: more than %d files", strings.Join(dirs, ", "), maxDropInFiles)
			}
			byName[n] = d
		}
	}
	out := make([]dropIn, 0, len(byName))
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[n])
	}
	return out, nil
}

// dropInEntry is the drop-in of a directory entry, or false for a
// directory, which the scheme does not read.
func dropInEntry(fsys sysroot.FS, dir string, e fs.DirEntry) (dropIn, bool) {
	full := path.Join(dir, e.Name())
	d := dropIn{name: full, display: full}
	switch {
	case e.IsDir():
		return d, false
	case e.Type()&fs.ModeSymlink != 0:
		if info, err := fsys.Stat(full); err == nil && info.IsDir() {
			return d, false
		}
		target, err := textfile.Readlink(fsys, full)
		if err != nil {
			return d, true
		}
		if !path.IsAbs(target) {
			target = path.Join(dir, target)
		}
		target = path.Clean(target)
		if target == "/dev/null" {
			d.masked = true
		} else {
			d.display = target
		}
	}
	return d, true
}

// readDropIn reads a drop-in as text, or says (false) there is nothing to
// read: a masked one, or a dangling link, which the tools pass over too.
func readDropIn(fsys sysroot.FS, d dropIn) ([]byte, bool, error) {
	if d.masked {
		return nil, false, nil
	}
	data, ok, err := textfile.ReadOptionalLimit(fsys, d.name, maxDropInFile)
	if err != nil || !ok {
		return nil, ok, err
	}
	if err := textfile.CheckText(data); err != nil {
		return nil, false, fmt.Errorf("parsing %s: %w", d.display, err)
	}
	return data, true, nil
}
