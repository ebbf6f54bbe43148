// Package audit collects the Linux audit trail: whether auditd is there
// and running, the rules it loads from its files, the rules the kernel
// holds on a live host, and where the log goes when the disk fills or a
// remote should receive it.
package audit

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
)

// maxRules bounds the rules one target may carry; real rule sets (the CIS
// and STIG ones included) hold a few hundred.
const maxRules = 10000

// maxRuleLine bounds one line of a rules file.
const maxRuleLine = 64 << 10

// ParseRules reads an audit rules file in auditctl's syntax, one rule per
// line. display names the file in facts and errors. Control lines (-D,
// -b, -e, -f, ...) are kept as kind "control" so that a check can see
// "-e 2" (rules locked until reboot).
func ParseRules(display string, data []byte) ([]facts.AuditRule, error) {
	var rules []facts.AuditRule
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxRuleLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		r, err := parseRule(line)
		if err != nil {
			return nil, fmt.Errorf("parsing %s line %d: %w", display, n, err)
		}
		r.File, r.Line = display, n
		if len(rules) >= maxRules {
			return nil, fmt.Errorf("parsing %s: more than %d rules", display, maxRules)
		}
		rules = append(rules, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", display, err)
	}
	return rules, nil
}

// auditOps are the -F operators, longest first so that "!=" is not read
// as "=".
var auditOps = []string{"!=", "<=", ">=", "&=", "=", "<", ">", "&"}

// parseRule reads one auditctl command line.
func parseRule(line string) (facts.AuditRule, error) {
	args := strings.Fields(line)
	r := facts.AuditRule{Kind: "control", Syscalls: []string{}, Fields: []facts.AuditField{}}
	next := func(i int, flag string) (string, error) {
		if i+1 >= len(args) {
			return "", fmt.Errorf("%s needs an argument", flag)
		}
		return args[i+1], nil
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-w", "-W":
			v, err := next(i, a)
			if err != nil {
				return r, err
			}
			i++
			if a == "-W" {
				r.Kind = "delete_watch"
			} else {
				r.Kind = "watch"
			}
			r.Path = v
		case "-p":
			v, err := next(i, a)
			if err != nil {
				return r, err
			}
			i++
			if strings.Trim(v, "rwxa") != "" {
				return r, fmt.Errorf("-p %q: permissions are r, w, x and a", v)
			}
			r.Perms = sortPerms(v)
		case "-k":
			v, err := next(i, a)
			if err != nil {
				return r, err
			}
			i++
			r.Key = v
		case "-a", "-A", "-d":
			v, err := next(i, a)
			if err != nil {
				return r, err
			}
			i++
			list, action, err := listAction(v)
			if err != nil {
				return r, err
			}
			r.Kind = map[string]string{"-a": "syscall", "-A": "syscall", "-d": "delete"}[a]
			r.List, r.Action = list, action
		case "-S":
			v, err := next(i, a)
			if err != nil {
				return r, err
			}
			i++
			for _, s := range strings.Split(v, ",") {
				if s != "" && !slices.Contains(r.Syscalls, s) {
					r.Syscalls = append(r.Syscalls, s)
				}
			}
		case "-F":
			v, err := next(i, a)
			if err != nil {
				return r, err
			}
			i++
			f, err := parseField(v)
			if err != nil {
				return r, err
			}
			switch f.Name {
			case "key":
				r.Key = f.Value
			case "path", "dir":
				r.Path = f.Value
				r.Fields = append(r.Fields, f)
			case "perm":
				if strings.Trim(f.Value, "rwxa") != "" || f.Op != "=" {
					return r, fmt.Errorf("-F %q: perm= takes r, w, x and a", v)
				}
				r.Perms = sortPerms(f.Value)
				r.Fields = append(r.Fields, f)
			case "arch":
				r.Arch = f.Value
				r.Fields = append(r.Fields, f)
			default:
				r.Fields = append(r.Fields, f)
			}
		case "-C":
			// A comparison of two fields (auid!=uid): kept as written.
			v, err := next(i, a)
			if err != nil {
				return r, err
			}
			i++
			r.Fields = append(r.Fields, facts.AuditField{Name: "compare", Op: "", Value: v})
		case "-b", "-e", "-f", "-r", "--backlog_wait_time", "-s":
			// Control options with a value: what they set is kept
			// in Text.
			if _, err := next(i, a); err != nil {
				return r, err
			}
			i++
		default:
			// Control options without one (-D, -i, -c,
			// --loginuid-immutable, --reset-lost).
			if !strings.HasPrefix(a, "-") {
				return r, fmt.Errorf("unexpected %q", a)
			}
		}
	}
	if r.Kind == "control" && (len(r.Syscalls) > 0 || len(r.Fields) > 0 || r.Perms != "" || r.Key != "" || r.Path != "") {
		return r, fmt.Errorf("%q: -S, -F, -p and -k belong to a rule (-a or -w)", line)
	}
	slices.Sort(r.Syscalls)
	r.Text = strings.Join(args, " ")
	if r.Kind == "watch" && r.Perms == "" {
		// auditctl watches all four when -p is left out.
		r.Perms = "arwx"
	}
	return r, nil
}

// listAction splits "-a always,exit" (either order) into list and action.
func listAction(v string) (list, action string, err error) {
	a, b, ok := strings.Cut(v, ",")
	if !ok {
		return "", "", fmt.Errorf("-a %q: want action,list such as always,exit", v)
	}
	isAction := func(s string) bool { return s == "always" || s == "never" }
	switch {
	case isAction(a) && !isAction(b):
		action, list = a, b
	case isAction(b) && !isAction(a):
		action, list = b, a
	default:
		return "", "", fmt.Errorf("-a %q: want action,list such as always,exit", v)
	}
	switch list {
	case "exit", "task", "user", "exclude", "filesystem", "io_uring":
	default:
		return "", "", fmt.Errorf("-a %q: unknown list %q", v, list)
	}
	return list, action, nil
}

func parseField(v string) (facts.AuditField, error) {
	for _, op := range auditOps {
		if name, value, ok := strings.Cut(v, op); ok {
			if name == "" || value == "" || strings.ContainsAny(name, "!<>&=") {
				break
			}
			return facts.AuditField{Name: name, Op: op, Value: value}, nil
		}
	}
	return facts.AuditField{}, fmt.Errorf("-F %q: want field op value, such as auid>=1000", v)
}

// sortPerms puts permission letters in one order, so that "wa" and "aw"
// compare equal.
func sortPerms(p string) string {
	b := []byte(p)
	slices.Sort(b)
	return string(slices.Compact(b))
}
