package access

import (
	"fmt"
	"path"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	pamDir = "/etc/pam.d"
	// maxPAMFile bounds one PAM stack file.
	maxPAMFile = 256 << 10
	// maxPAMDepth bounds nested @include and include/substack lines.
	maxPAMDepth = 16
	// maxPAMRules bounds one expanded stack.
	maxPAMRules = 10000
)

// LoadPAM reads the PAM stack of service (such as "sshd") with its
// includes expanded in place, as libpam reads it. It returns nil when
// the service has no file.
func LoadPAM(fsys sysroot.FS, service string) ([]facts.PAMRule, error) {
	name := path.Join(pamDir, service)
	if _, err := fsys.Stat(name); sysroot.IsNotExist(err) {
		return nil, nil
	}
	rules := []facts.PAMRule{}
	if err := loadPAM(fsys, name, "", 0, &rules); err != nil {
		return nil, err
	}
	return rules, nil
}

// loadPAM appends the rules of name; only, when set, keeps the lines of
// one type, as "auth include common-auth" includes only common-auth's auth
// lines.
func loadPAM(fsys sysroot.FS, name, only string, depth int, out *[]facts.PAMRule) error {
	if depth > maxPAMDepth {
		return fmt.Errorf("%s: includes nested deeper than %d", fsys.Display(name), maxPAMDepth)
	}
	data, err := fsys.ReadFileLimit(name, maxPAMFile)
	if err != nil {
		return fmt.Errorf("reading %s: %w", fsys.Display(name), err)
	}
	rules, err := ParsePAM(fsys.Display(name), data)
	if err != nil {
		return err
	}
	for _, r := range rules {
		if only != "" && r.Type != only && r.Type != "@include" {
			continue
		}
		switch {
		case r.Type == "@include":
			if err := loadPAM(fsys, pamPath(r.Module), only, depth+1, out); err != nil {
				return err
			}
			continue
		case r.Control == "include" || r.Control == "substack":
			if err := loadPAM(fsys, pamPath(r.Module), r.Type, depth+1, out); err != nil {
				return err
			}
			continue
		}
		if len(*out) >= maxPAMRules {
			return fmt.Errorf("%s: more than %d PAM rules", fsys.Display(name), maxPAMRules)
		}
		*out = append(*out, r)
	}
	return nil
}

// pamPath resolves an included stack's name against /etc/pam.d.
func pamPath(name string) string {
	if path.IsAbs(name) {
		return name
	}
	return path.Join(pamDir, name)
}

// ParsePAM reads one PAM stack file: "type control module args" lines, a
// leading "-" on the type (skip the line when the module is missing), the
// bracketed control syntax, and Debian's "@include file".
func ParsePAM(display string, data []byte) ([]facts.PAMRule, error) {
	rules := []facts.PAMRule{}
	ls, nums := logicalLines(data)
	for i, raw := range ls {
		line := raw
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		n := nums[i]
		if rest, ok := strings.CutPrefix(line, "@include"); ok {
			target := strings.TrimSpace(rest)
			if target == "" {
				return nil, fmt.Errorf("parsing %s line %d: @include needs a file", display, n)
			}
			rules = append(rules, facts.PAMRule{File: display, Line: n, Type: "@include", Module: target, Args: []string{}})
			continue
		}
		typ, rest := cutWord(line)
		typ = strings.TrimPrefix(typ, "-")
		switch typ {
		case "auth", "account", "password", "session":
		default:
			return nil, fmt.Errorf("parsing %s line %d: unknown type %q", display, n, typ)
		}
		var control string
		if strings.HasPrefix(rest, "[") {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("parsing %s line %d: unclosed [ in control", display, n)
			}
			control, rest = rest[:end+1], strings.TrimSpace(rest[end+1:])
		} else {
			control, rest = cutWord(rest)
		}
		module, rest := cutWord(rest)
		if control == "" || module == "" {
			return nil, fmt.Errorf("parsing %s line %d: want type control module [args]", display, n)
		}
		r := facts.PAMRule{File: display, Line: n, Type: typ, Control: control, Module: path.Base(module), Args: strings.Fields(rest)}
		if r.Control == "include" || r.Control == "substack" {
			r.Module = module
		}
		if r.Args == nil {
			r.Args = []string{}
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func cutWord(s string) (word, rest string) {
	s = strings.TrimSpace(s)
	i := strings.IndexAny(s, " \t")
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}
