package osinfo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// modprobeDirs are where modprobe.d(5) files are, in kmod's order of
// precedence. kmod 29 (Ubuntu 22.04) reads /lib/modprobe.d and later ones
// /usr/lib/modprobe.d; on a merged /usr they are one directory, and its
// names hide themselves.
var modprobeDirs = []string{"/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d", "/usr/lib/modprobe.d", "/lib/modprobe.d"}

const (
	// maxModuleNames bounds the modules the configuration may name.
	maxModuleNames = 4096
	// maxProcModules bounds /proc/modules: a kernel holds a few hundred.
	maxProcModules = 1 << 20
	// maxLoadedModules bounds the modules taken from it.
	maxLoadedModules = 16384
)

// CollectKernelModules reads what decides whether a module can load: the
// install and blacklist lines of modprobe.d, and on a live host the
// modules loaded. It reads the target alone.
func CollectKernelModules(_ context.Context, env *collect.Env) (*facts.KernelModules, error) {
	files, err := dropIns(env.FS, modprobeDirs, ".conf")
	if err != nil {
		return nil, fmt.Errorf("reading modprobe configuration: %w", err)
	}
	m := &facts.KernelModules{Files: []string{}, Modules: map[string]facts.ModuleConfig{}}
	for _, f := range files {
		data, ok, err := readDropIn(env.FS, f)
		if err != nil {
			return nil, fmt.Errorf("reading modprobe configuration: %w", err)
		}
		if !ok {
			continue
		}
		m.Files = append(m.Files, f.display)
		if err := parseModprobe(data, f.display, m.Modules); err != nil {
			return nil, err
		}
	}
	if env.Live {
		if m.Loaded, err = loadedModules(env.FS); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// parseModprobe adds what one modprobe.d file says of each module to
// modules, as kmod reads it: a line may go on after a trailing backslash,
// "#" comments only in the first column, words part at blanks, and the
// first install line for a module is the one modprobe obeys. Lines kmod
// would refuse are passed over, as it passes over them.
func parseModprobe(data []byte, file string, modules map[string]facts.ModuleConfig) error {
	for l := range modprobeLines(data) {
		cmd, rest := nextWord(l.text)
		if cmd != "install" && cmd != "blacklist" {
			continue
		}
		name, rest := nextWord(rest)
		name, ok := moduleName(name)
		if !ok {
			continue
		}
		c, known := modules[name]
		switch {
		case cmd == "blacklist" && c.Blacklist == nil:
			c.Blacklist = &collect.FileLine{File: file, Line: l.line}
		case cmd == "install" && c.Install == nil && len(rest) > 1:
			// kmod hands the shell what follows the name's blank, and
			// refuses a line with nothing there.
			c.Install = &facts.ModuleInstall{Command: strings.Trim(rest[1:], " \t"), File: file, Line: l.line}
		default:
			continue
		}
		if !known && len(modules) == maxModuleNames {
			return fmt.Errorf("parsing %s: more than %d modules named", file, maxModuleNames)
		}
		modules[name] = c
	}
	return nil
}

// modprobeLine is one logical line of a modprobe.d file and the line it
// starts on.
type modprobeLine struct {
	text string
	line int
}

// modprobeLines yields a file's logical lines: one that ends in a
// backslash goes on in the next, as kmod's reader joins them. Comment and
// empty lines are left out.
func modprobeLines(data []byte) func(func(modprobeLine) bool) {
	return func(yield func(modprobeLine) bool) {
		var b strings.Builder
		start := 0
		for i, raw := range textfile.Lines(data) {
			if b.Len() == 0 {
				start = i + 1
			}
			if cont, ok := strings.CutSuffix(raw, `\`); ok {
				b.WriteString(cont)
				continue
			}
			b.WriteString(raw)
			text := b.String()
			b.Reset()
			if text == "" || text[0] == '#' {
				continue
			}
			if !yield(modprobeLine{text: text, line: start}) {
				return
			}
		}
		if text := b.String(); text != "" && text[0] != '#' {
			yield(modprobeLine{text: text, line: start})
		}
	}
}

// nextWord splits s after its first word, as strtok does with blanks and
// tabs: the rest keeps the blank that ended the word.
func nextWord(s string) (word, rest string) {
	s = strings.TrimLeft(s, " \t")
	end := strings.IndexAny(s, " \t")
	if end < 0 {
		return s, ""
	}
	return s[:end], s[end:]
}

// moduleName is a module name as kmod compares it: "-" read as "_" outside
// a bracket expression. A name with an unclosed bracket is refused, as
// kmod refuses its line.
func moduleName(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '-':
			b[i] = '_'
		case ']':
			return "", false
		case '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return "", false
			}
			i += end
		}
	}
	return string(b), true
}

// loadedModules lists the modules the running kernel holds, sorted; none
// when the kernel has no module support (no /proc/modules).
func loadedModules(fsys sysroot.FS) ([]string, error) {
	data, ok, err := textfile.ReadOptionalLimit(fsys, "/proc/modules", maxProcModules)
	if err != nil {
		return nil, fmt.Errorf("reading loaded modules: %w", err)
	}
	if !ok {
		return []string{}, nil
	}
	return parseProcModules(data)
}

// parseProcModules takes the module names, the first word of each line
// of /proc/modules.
func parseProcModules(data []byte) ([]string, error) {
	out := []string{}
	for _, l := range textfile.Lines(data) {
		name, _ := nextWord(l)
		if name == "" {
			continue
		}
		if len(out) == maxLoadedModules {
			return nil, fmt.Errorf("reading loaded modules: more than %d", maxLoadedModules)
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
