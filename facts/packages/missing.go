package packages

import (
	"fmt"
	"io/fs"
	"slices"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// MissingButInstalled says why a configuration file that is absent cannot
// mean "not installed": one of the packages that ship it (shippedBy) is
// installed, so the file was removed or replaced by a link to nothing, and
// the daemon runs on settings nobody can read. It returns nil when the
// absence is honest.
func MissingButInstalled(fsys sysroot.FS, pkgs []facts.Package, name string, shippedBy []string) error {
	for _, p := range pkgs {
		if !slices.Contains(shippedBy, p.Name) {
			continue
		}
		what := "is missing"
		if st, err := fsys.Lstat(name); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			what = "is a symbolic link to nothing in the target"
			if to, err := textfile.Readlink(fsys, name); err == nil {
				what = fmt.Sprintf("is a symbolic link to %s, which does not exist in the target", to)
			}
		}
		return fmt.Errorf("%s %s, but package %s %s, which installs it, is installed", fsys.Display(name), what, p.Name, p.Version)
	}
	return nil
}
