package osinfo

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// maxWantsDirs bounds how many .wants/.requires directories are listed.
const maxWantsDirs = 1024

// Collect lists what the administrator enabled and masked. Only /etc (and,
// live, /run) count: the .wants links under /usr/lib/systemd/system are the
// vendor's static dependencies, not something anyone enabled. systemd's
// version is its package's, from the installed packages.
func CollectSystemd(_ context.Context, env *collect.Env, installed []facts.Package) (*facts.Systemd, error) {
	enabled, masked, err := EnabledUnits(env.FS, env.Live)
	if err != nil {
		return nil, err
	}
	s := &facts.Systemd{Enabled: enabled, Masked: masked}
	if p, ok := packages.Installed(installed, "systemd"); ok {
		s.Version = majorVersion(p.Version)
	}
	return s, nil
}

// EnabledUnits lists, sorted, the units an administrator enabled (their
// .wants and .requires links) and masked, under /etc/systemd/system and,
// live, /run/systemd/system: what the systemd facts report, for collectors
// that need one unit's state before those facts exist.
func EnabledUnits(fsys sysroot.FS, live bool) (enabled, masked []string, err error) {
	dirs := []string{"/etc/systemd/system"}
	if live {
		dirs = append(dirs, "/run/systemd/system")
	}
	on, off := map[string]bool{}, map[string]bool{}
	for _, dir := range dirs {
		if err := unitDir(fsys, dir, on, off); err != nil {
			return nil, nil, err
		}
	}
	return sortedKeys(on), sortedKeys(off), nil
}

func unitDir(fsys sysroot.FS, dir string, enabled, masked map[string]bool) error {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		if sysroot.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("listing units: %w", err)
	}
	dirs := 0
	for _, e := range entries {
		name := e.Name()
		full := path.Join(dir, name)
		if strings.HasSuffix(name, ".wants") || strings.HasSuffix(name, ".requires") {
			if dirs++; dirs > maxWantsDirs {
				return fmt.Errorf("listing units: %s has more than %d dependency directories", fsys.Display(dir), maxWantsDirs)
			}
			units, err := fsys.ReadDir(full)
			if err != nil {
				if sysroot.IsNotExist(err) {
					continue
				}
				return fmt.Errorf("listing units: %w", err)
			}
			for _, u := range units {
				// Dangling links are fine: the name is what was enabled.
				if isUnitName(u.Name()) {
					enabled[u.Name()] = true
				}
			}
			continue
		}
		if e.Type()&fs.ModeSymlink != 0 && isUnitName(name) && isMasked(fsys, full) {
			masked[name] = true
		}
	}
	return nil
}

// isMasked tells whether the link at name points to /dev/null. Without a
// way to read links it falls back to what the link resolves to inside the
// root, which is a character device only where /dev is populated.
func isMasked(fsys sysroot.FS, name string) bool {
	if target, err := textfile.Readlink(fsys, name); err == nil {
		return path.Clean(target) == "/dev/null"
	}
	info, err := fsys.Stat(name)
	return err == nil && info.Mode()&fs.ModeCharDevice != 0
}

var unitSuffixes = []string{".service", ".socket", ".target", ".timer", ".mount", ".automount", ".swap", ".path", ".slice", ".scope", ".device"}

func isUnitName(n string) bool {
	for _, s := range unitSuffixes {
		if strings.HasSuffix(n, s) && len(n) > len(s) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
