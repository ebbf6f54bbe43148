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
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// sysctlDirs are where sysctl.d(5) files are, in systemd-sysctl's order of
// precedence.
var sysctlDirs = []string{"/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d", "/lib/sysctl.d"}

// sysctlConf is procps' own file, which `sysctl --system` reads last and
// Debian's /etc/sysctl.d/99-sysctl.conf links into systemd-sysctl's order.
const sysctlConf = "/etc/sysctl.conf"

const (
	// maxSysctlKeys bounds the keys, globs and exclusions the
	// configuration may name, together.
	maxSysctlKeys = 16384
	// maxRunningKeys bounds the parameters read from /proc/sys: a kernel
	// shows about a thousand, most of them per network interface.
	maxRunningKeys = 16384
	// maxProcSysValue bounds one parameter's value.
	maxProcSysValue = 4096
	// maxProcSysDepth bounds how deep /proc/sys is walked; its deepest
	// parameters are five levels down (net.ipv4.conf.all.rp_filter).
	maxProcSysDepth = 8
)

// CollectSysctl reads the kernel parameters the sysctl.d files configure
// for the next boot and, on a live host, the values the running kernel
// holds. It reads the target alone.
func CollectSysctl(_ context.Context, env *collect.Env) (*facts.Sysctl, error) {
	files, err := sysctlFiles(env.FS)
	if err != nil {
		return nil, fmt.Errorf("reading sysctl configuration: %w", err)
	}
	s := &facts.Sysctl{Files: []string{}, Configured: map[string]facts.SysctlSetting{}, Globs: []facts.SysctlGlob{}, Excluded: map[string]collect.FileLine{}}
	for _, f := range files {
		data, ok, err := readDropIn(env.FS, f)
		if err != nil {
			return nil, fmt.Errorf("reading sysctl configuration: %w", err)
		}
		if !ok {
			continue
		}
		s.Files = append(s.Files, f.display)
		if err := parseSysctl(data, f.display, s); err != nil {
			return nil, err
		}
	}
	if env.Live {
		if s.Running, err = runningSysctl(env.FS, s.Configured); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// sysctlFiles are the files systemd-sysctl reads, then /etc/sysctl.conf
// where no link among them already reads it.
func sysctlFiles(fsys sysroot.FS) ([]dropIn, error) {
	files, err := dropIns(fsys, sysctlDirs, ".conf")
	if err != nil {
		return nil, err
	}
	if slices.ContainsFunc(files, func(d dropIn) bool { return d.display == sysctlConf }) {
		return files, nil
	}
	return append(files, dropIn{name: sysctlConf, display: sysctlConf}), nil
}

// parseSysctl applies one sysctl.d file to s as systemd-sysctl does:
// "key = value" with blanks trimmed, "#" and ";" comments, a leading "-"
// on a key only ignoring a failure to set it, and "-key" alone keeping the
// globs off key. Assigning a key again moves it to the new value; the same
// value again keeps the first line, as systemd keeps it. Lines that are
// no assignment are passed over, as systemd passes over them.
func parseSysctl(data []byte, file string, s *facts.Sysctl) error {
	for i, raw := range textfile.Lines(data) {
		line := strings.TrimSpace(raw)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, value, assigns := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !assigns && !strings.HasPrefix(k, "-") {
			continue
		}
		key, ok := sysctlKey(strings.TrimPrefix(k, "-"))
		if !ok {
			continue
		}
		at := collect.FileLine{File: file, Line: i + 1}
		switch {
		case !assigns:
			excludeSysctl(s, key, at)
		case isGlob(key):
			globSysctl(s, facts.SysctlGlob{Pattern: key, Value: strings.TrimSpace(value), File: file, Line: at.Line})
		default:
			setSysctl(s, key, facts.SysctlSetting{Value: strings.TrimSpace(value), File: file, Line: at.Line})
		}
		if len(s.Configured)+len(s.Globs)+len(s.Excluded) > maxSysctlKeys {
			return fmt.Errorf("parsing %s: more than %d kernel parameters configured", file, maxSysctlKeys)
		}
	}
	return nil
}

// setSysctl assigns key, which also undoes an earlier "-key".
func setSysctl(s *facts.Sysctl, key string, v facts.SysctlSetting) {
	if old, ok := s.Configured[key]; ok && old.Value == v.Value {
		return
	}
	delete(s.Excluded, key)
	s.Configured[key] = v
}

// excludeSysctl keeps the globs off key, and drops what an earlier line
// assigned it: systemd replaces that assignment with the value-less one.
// A glob pattern alone drops the glob's earlier assignment.
func excludeSysctl(s *facts.Sysctl, key string, at collect.FileLine) {
	if isGlob(key) {
		s.Globs = slices.DeleteFunc(s.Globs, func(g facts.SysctlGlob) bool { return g.Pattern == key })
		return
	}
	delete(s.Configured, key)
	if _, ok := s.Excluded[key]; !ok {
		s.Excluded[key] = at
	}
}

// globSysctl appends a glob's assignment, moving a pattern assigned
// before to the end unless its value is the same.
func globSysctl(s *facts.Sysctl, g facts.SysctlGlob) {
	i := slices.IndexFunc(s.Globs, func(o facts.SysctlGlob) bool { return o.Pattern == g.Pattern })
	if i >= 0 {
		if s.Globs[i].Value == g.Value {
			return
		}
		s.Globs = slices.Delete(s.Globs, i, i+1)
	}
	s.Globs = append(s.Globs, g)
}

// isGlob says whether a key is a glob, as systemd's string_is_glob does.
func isGlob(key string) bool { return strings.ContainsAny(key, "*?[") }

// sysctlKey is a key in sysctl's dotted form. sysctl.d(5): the first
// separator decides, so a key whose first one is "/" has its dots and
// slashes swapped ("net/ipv4/conf/eth0.1/rp_filter" is
// "net.ipv4.conf.eth0/1.rp_filter"); empty parts are dropped, as systemd
// simplifies the path. A key with a "." or ".." part in its path form
// names no parameter and is refused: it would lead out of /proc/sys.
func sysctlKey(k string) (string, bool) {
	i := strings.IndexAny(k, "./")
	if i < 0 {
		return k, k != ""
	}
	slashed := k
	if k[i] == '.' {
		slashed = swapSeparators(k)
	}
	var parts []string
	for p := range strings.SplitSeq(slashed, "/") {
		switch p {
		case "":
			continue
		case ".", "..":
			return "", false
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "", false
	}
	return swapSeparators(strings.Join(parts, "/")), true
}

// swapSeparators turns dots into slashes and slashes into dots.
func swapSeparators(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, s)
}

// procSysPerInterface are the /proc/sys folders that hold a folder per
// network interface: only all, default and the interfaces a file
// configures are read, since a container host has hundreds of veths.
var procSysPerInterface = []string{"net/ipv4/conf", "net/ipv6/conf", "net/ipv4/neigh", "net/ipv6/neigh"}

// runningSysctl reads the values the running kernel holds under
// /proc/sys: of the per-interface folders, those of all, default and the
// interfaces configured keys name.
func runningSysctl(fsys sysroot.FS, configured map[string]facts.SysctlSetting) (map[string]string, error) {
	w := procSysWalk{fsys: fsys, out: map[string]string{}, ifaces: map[string]bool{}}
	for key := range configured {
		if slashed := swapSeparators(key); inPerInterface(slashed) {
			w.ifaces[path.Dir(slashed)] = true
		}
	}
	if err := w.dir("", 0); err != nil {
		return nil, err
	}
	return w.out, nil
}

// inPerInterface says whether a parameter's path is in a folder of one
// network interface.
func inPerInterface(slashed string) bool {
	dir := path.Dir(path.Dir(slashed))
	return slices.Contains(procSysPerInterface, dir)
}

// procSysWalk walks /proc/sys within its bounds.
type procSysWalk struct {
	fsys sysroot.FS
	out  map[string]string
	// ifaces are the per-interface folders ("net/ipv4/conf/eth0") a file
	// configures.
	ifaces map[string]bool
}

// dir reads the parameters under /proc/sys/rel.
func (w *procSysWalk) dir(rel string, depth int) error {
	if depth > maxProcSysDepth || rel == "fs/binfmt_misc" {
		// binfmt_misc is a file system of its own mounted there, whose
		// files are registered interpreters, not parameters.
		return nil
	}
	entries, err := w.fsys.ReadDir(path.Join("/proc/sys", rel))
	if err != nil {
		if sysroot.IsNotExist(err) && rel == "" {
			return collect.Unavailable("/proc/sys is not readable")
		}
		// A folder that vanished (an interface removed) or refuses
		// reading holds nothing to report.
		return nil
	}
	perInterface := slices.Contains(procSysPerInterface, rel)
	for _, e := range entries {
		child := path.Join(rel, e.Name())
		if perInterface && e.Name() != "all" && e.Name() != "default" && !w.ifaces[child] {
			continue
		}
		if e.IsDir() {
			if err := w.dir(child, depth+1); err != nil {
				return err
			}
			continue
		}
		if err := w.file(child, e); err != nil {
			return err
		}
	}
	return nil
}

// file reads one parameter, if the kernel lets it be read: write-only
// ones (vm.drop_caches) and those whose read fails are left out.
func (w *procSysWalk) file(rel string, e fs.DirEntry) error {
	info, err := e.Info()
	if err != nil || info.Mode().Perm()&0o444 == 0 {
		return nil
	}
	if len(w.out) == maxRunningKeys {
		return fmt.Errorf("reading /proc/sys: more than %d parameters", maxRunningKeys)
	}
	data, err := w.fsys.ReadFileLimit(path.Join("/proc/sys", rel), maxProcSysValue)
	if err != nil {
		return nil
	}
	w.out[swapSeparators(rel)] = strings.Join(strings.Fields(string(data)), " ")
	return nil
}
