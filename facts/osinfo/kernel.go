package osinfo

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"pault.ag/go/debian/version"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// maxCmdline bounds a command-line file; the kernel itself caps the command
// line at a few KiB.
const maxCmdline = 64 << 10

// maxCmdlineParams bounds the parameters placed on their lines: a crafted
// grub file of many drop-ins cannot grow the map without limit.
const maxCmdlineParams = 4096

// maxLoaderEntries bounds how many boot loader entries are looked at.
const maxLoaderEntries = 256

// CollectKernel lists the installed kernels and reads the command line: a
// live host's from /proc, an image's from its boot loader's configuration,
// each parameter placed on its line. It reads the target alone.
func CollectKernel(_ context.Context, env *collect.Env) (*facts.Kernel, error) {
	installed, err := installedKernels(env.FS)
	if err != nil {
		return nil, err
	}
	k := &facts.Kernel{Installed: installed, Cmdline: []string{}}
	if env.Live {
		rel, err := env.FS.ReadFileLimit("/proc/sys/kernel/osrelease", 4096)
		if err != nil {
			return nil, fmt.Errorf("reading kernel release: %w", err)
		}
		k.Release = strings.TrimSpace(string(rel))
		cmd, err := env.FS.ReadFileLimit("/proc/cmdline", maxCmdline)
		if err != nil {
			return nil, fmt.Errorf("reading kernel command line: %w", err)
		}
		k.Cmdline = splitCmdline(string(cmd))
		k.CmdlineSource = "/proc/cmdline"
	} else {
		if len(installed) > 0 {
			k.Release = installed[len(installed)-1]
		}
		cmdline, source, at, err := configuredCmdline(env.FS)
		if err != nil {
			return nil, err
		}
		k.Cmdline, k.CmdlineSource, k.CmdlineLocations = cmdline, source, at
	}
	return k, nil
}

// installedKernels lists the module trees under /lib/modules (or
// /usr/lib/modules on a merged-/usr system whose /lib link is absent),
// ordered oldest to newest by Debian version order.
func installedKernels(fsys sysroot.FS) ([]string, error) {
	var entries []fs.DirEntry
	var dir string
	for _, d := range []string{"/lib/modules", "/usr/lib/modules"} {
		e, err := fsys.ReadDir(d)
		if err != nil {
			if sysroot.IsNotExist(err) {
				continue
			}
			return nil, fmt.Errorf("listing kernels: %w", err)
		}
		entries, dir = e, d
		break
	}
	var names []string
	for _, e := range entries {
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			info, err := fsys.Stat(path.Join(dir, e.Name()))
			isDir = err == nil && info.IsDir()
		}
		if isDir {
			names = append(names, e.Name())
		}
	}
	slices.SortStableFunc(names, compareKernel)
	return names, nil
}

// compareKernel orders kernel releases as dpkg orders their package
// versions ("6.8.0-45-generic" after "6.8.0-9-generic"); names that are not
// versions sort before those that are, then by bytes.
func compareKernel(a, b string) int {
	va, ea := version.Parse(a)
	vb, eb := version.Parse(b)
	switch {
	case ea == nil && eb == nil:
		if c := version.Compare(va, vb); c != 0 {
			return c
		}
	case ea == nil:
		return 1
	case eb == nil:
		return -1
	}
	return strings.Compare(a, b)
}

// configuredCmdline finds the command line an image will boot with, in the
// order the boot paths take precedence: kernel-install's /etc/kernel/cmdline,
// then Boot Loader Specification entries, then GRUB's defaults.
func configuredCmdline(fsys sysroot.FS) ([]string, string, map[string]collect.FileLine, error) {
	const kc = "/etc/kernel/cmdline"
	data, ok, err := textfile.ReadOptionalLimit(fsys, kc, maxCmdline)
	if err != nil {
		return nil, "", nil, fmt.Errorf("reading kernel command line: %w", err)
	}
	if ok {
		return splitCmdline(string(data)), kc, nil, nil
	}

	entries, err := fsys.Glob("/boot/loader/entries/*.conf")
	if err != nil {
		return nil, "", nil, fmt.Errorf("listing boot loader entries: %w", err)
	}
	if len(entries) > maxLoaderEntries {
		entries = entries[:maxLoaderEntries]
	}
	for _, e := range entries {
		name := "/" + strings.TrimPrefix(e, "/")
		data, err := fsys.ReadFileLimit(name, maxCmdline)
		if err != nil {
			return nil, "", nil, fmt.Errorf("reading boot loader entry: %w", err)
		}
		var opts []string
		found := false
		for _, l := range textfile.Lines(data) {
			key, rest, _ := strings.Cut(strings.TrimSpace(l), " ")
			if key == "options" {
				found = true
				opts = append(opts, splitCmdline(rest)...)
			}
		}
		if found {
			if opts == nil {
				opts = []string{}
			}
			return opts, name, nil, nil
		}
	}
	return grubCmdline(fsys)
}

// grubCmdline evaluates GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT the
// way grub-mkconfig does: /etc/default/grub, then every
// /etc/default/grub.d/*.cfg in lexical order, later assignments winning.
func grubCmdline(fsys sysroot.FS) ([]string, string, map[string]collect.FileLine, error) {
	files := []string{"/etc/default/grub"}
	dropins, err := fsys.Glob("/etc/default/grub.d/*.cfg")
	if err != nil {
		return nil, "", nil, fmt.Errorf("listing grub drop-ins: %w", err)
	}
	if len(dropins) > maxLoaderEntries {
		dropins = dropins[:maxLoaderEntries]
	}
	for _, d := range dropins {
		files = append(files, "/"+strings.TrimPrefix(d, "/"))
	}
	vars := map[string]string{}
	var used []string
	g := grubParams{at: map[string]collect.FileLine{}}
	for _, name := range files {
		data, ok, err := textfile.ReadOptional(fsys, name)
		if err != nil {
			return nil, "", nil, fmt.Errorf("reading grub defaults: %w", err)
		}
		if !ok {
			continue
		}
		before := maps.Clone(vars)
		assigned, err := textfile.ParseShell(data, vars, true)
		if err != nil {
			return nil, "", nil, fmt.Errorf("parsing %s: %w", fsys.Display(name), err)
		}
		cmdline := false
		for _, a := range assigned {
			if a.Name == "GRUB_CMDLINE_LINUX" || a.Name == "GRUB_CMDLINE_LINUX_DEFAULT" {
				cmdline = true
				g.assign(name, a, before[a.Name])
				before[a.Name] = a.Value
			}
		}
		if cmdline {
			used = append(used, name)
		}
	}
	if len(used) == 0 {
		return []string{}, "", nil, nil
	}
	cmdline := splitCmdline(vars["GRUB_CMDLINE_LINUX"] + " " + vars["GRUB_CMDLINE_LINUX_DEFAULT"])
	return cmdline, strings.Join(used, ", "), g.at, nil
}

// grubParams places each kernel parameter of the grub defaults on the
// assignment that put it there: the line whose change a fix edits.
type grubParams struct{ at map[string]collect.FileLine }

// assign records the parameters an assignment adds or changes against the
// variable's value before it, so that a drop-in that appends to
// "$GRUB_CMDLINE_LINUX" is the place of what it appends alone.
func (g grubParams) assign(file string, a textfile.Assignment, prev string) {
	had := map[string]bool{}
	for _, p := range splitCmdline(prev) {
		had[p] = true
	}
	for _, p := range splitCmdline(a.Value) {
		if had[p] || len(g.at) >= maxCmdlineParams {
			continue
		}
		key, _, _ := strings.Cut(p, "=")
		g.at[key] = collect.FileLine{File: file, Line: a.Line}
	}
}

// splitCmdline splits a kernel command line on blanks, keeping double-quoted
// stretches together and dropping the quotes, as the kernel's own parser
// does. It never returns nil.
func splitCmdline(s string) []string {
	out := []string{}
	var b strings.Builder
	inQuote, inWord := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			inQuote = !inQuote
			inWord = true
		case !inQuote && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			if inWord {
				out = append(out, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, b.String())
	}
	return out
}

// cmdlineParam returns the value of the last occurrence of key on a command
// line (the kernel and systemd both let the last one win) and whether it was
// present; a bare "key" has the value "".
func cmdlineParam(cmdline []string, key string) (string, bool) {
	val, found := "", false
	for _, p := range cmdline {
		k, v, _ := strings.Cut(p, "=")
		if k == key {
			val, found = v, true
		}
	}
	return val, found
}
