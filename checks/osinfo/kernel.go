package osinfo

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"pault.ag/go/debian/version"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/internal/textfile"
	"github.com/gpuhost/gpuhost/checks/sysroot"
	"github.com/gpuhost/gpuhost/facts"
)

// maxCmdline bounds a command-line file; the kernel itself caps the command
// line at a few KiB.
const maxCmdline = 64 << 10

// maxLoaderEntries bounds how many boot loader entries are looked at.
const maxLoaderEntries = 256

type kernelCollector struct{}

var _ collector.Collector = kernelCollector{}

func (kernelCollector) Name() string { return "kernel" }

// Needs is empty: it reads the target alone.
func (kernelCollector) Needs() []string { return nil }

func (kernelCollector) Collect(_ context.Context, env *collector.Env, f *facts.Facts) error {
	installed, err := installedKernels(env.FS)
	if err != nil {
		return err
	}
	k := &facts.Kernel{Installed: installed, Cmdline: []string{}}
	if env.Live {
		rel, err := env.FS.ReadFileLimit("/proc/sys/kernel/osrelease", 4096)
		if err != nil {
			return fmt.Errorf("reading kernel release: %w", err)
		}
		k.Release = strings.TrimSpace(string(rel))
		cmd, err := env.FS.ReadFileLimit("/proc/cmdline", maxCmdline)
		if err != nil {
			return fmt.Errorf("reading kernel command line: %w", err)
		}
		k.Cmdline = splitCmdline(string(cmd))
		k.CmdlineSource = "/proc/cmdline"
	} else {
		if len(installed) > 0 {
			k.Release = installed[len(installed)-1]
		}
		cmdline, source, err := configuredCmdline(env.FS)
		if err != nil {
			return err
		}
		k.Cmdline, k.CmdlineSource = cmdline, source
	}
	f.Kernel = k
	return nil
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
func configuredCmdline(fsys sysroot.FS) ([]string, string, error) {
	const kc = "/etc/kernel/cmdline"
	data, ok, err := textfile.ReadOptionalLimit(fsys, kc, maxCmdline)
	if err != nil {
		return nil, "", fmt.Errorf("reading kernel command line: %w", err)
	}
	if ok {
		return splitCmdline(string(data)), kc, nil
	}

	entries, err := fsys.Glob("/boot/loader/entries/*.conf")
	if err != nil {
		return nil, "", fmt.Errorf("listing boot loader entries: %w", err)
	}
	if len(entries) > maxLoaderEntries {
		entries = entries[:maxLoaderEntries]
	}
	for _, e := range entries {
		name := "/" + strings.TrimPrefix(e, "/")
		data, err := fsys.ReadFileLimit(name, maxCmdline)
		if err != nil {
			return nil, "", fmt.Errorf("reading boot loader entry: %w", err)
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
			return opts, name, nil
		}
	}
	return grubCmdline(fsys)
}

// grubCmdline evaluates GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT the
// way grub-mkconfig does: /etc/default/grub, then every
// /etc/default/grub.d/*.cfg in lexical order, later assignments winning.
func grubCmdline(fsys sysroot.FS) ([]string, string, error) {
	files := []string{"/etc/default/grub"}
	dropins, err := fsys.Glob("/etc/default/grub.d/*.cfg")
	if err != nil {
		return nil, "", fmt.Errorf("listing grub drop-ins: %w", err)
	}
	if len(dropins) > maxLoaderEntries {
		dropins = dropins[:maxLoaderEntries]
	}
	for _, d := range dropins {
		files = append(files, "/"+strings.TrimPrefix(d, "/"))
	}
	vars := map[string]string{}
	var used []string
	for _, name := range files {
		data, ok, err := textfile.ReadOptional(fsys, name)
		if err != nil {
			return nil, "", fmt.Errorf("reading grub defaults: %w", err)
		}
		if !ok {
			continue
		}
		assigned, err := textfile.ParseShell(data, vars, true)
		if err != nil {
			return nil, "", fmt.Errorf("parsing %s: %w", fsys.Display(name), err)
		}
		if slices.Contains(assigned, "GRUB_CMDLINE_LINUX") || slices.Contains(assigned, "GRUB_CMDLINE_LINUX_DEFAULT") {
			used = append(used, name)
		}
	}
	if len(used) == 0 {
		return []string{}, "", nil
	}
	cmdline := splitCmdline(vars["GRUB_CMDLINE_LINUX"] + " " + vars["GRUB_CMDLINE_LINUX_DEFAULT"])
	return cmdline, strings.Join(used, ", "), nil
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
