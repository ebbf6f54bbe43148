// Package audit collects the Linux audit trail: whether auditd is there
// and running, the rules it loads from its files, the rules the kernel
// holds on a live host, and where the log goes when the disk fills or a
// remote should receive it.
package audit

import (
	"bufio"
	"bytes"
	"fmt"
	"github.com/gpuhost/gpuhost/facts"
	"slices"
	"strings"
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
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !valueOptions[a] {
			// Control options without a value (-D, -i, -c,
			// --loginuid-immutable, --reset-lost).
			if !strings.HasPrefix(a, "-") {
				return r, fmt.Errorf("unexpected %q", a)
			}
			continue
		}
		if i+1 >= len(args) {
			return r, fmt.Errorf("%s needs an argument", a)
		}
		i++
		if err := applyOption(&r, a, args[i]); err != nil {
			return r, err
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

// valueOptions are auditctl's options that take a value.
var valueOptions = map[string]bool{
	"-w": true, "-W": true, "-p": true, "-k": true, "-a": true, "-A": true, "-d": true, "-S": true, "-F": true, "-C": true,
	"-b": true, "-e": true, "-f": true, "-r": true, "--backlog_wait_time": true, "-s": true,
}

// applyOption records option a with its value v in r.
func applyOption(r *facts.AuditRule, a, v string) error {
	switch a {
	case "-w", "-W":
		r.Kind = "watch"
		if a == "-W" {
			r.Kind = "delete_watch"
		}
		r.Path = v
	case "-p":
		if strings.Trim(v, "rwxa") != "" {
			return fmt.Errorf("-p %q: permissions are r, w, x and a", v)
		}
		r.Perms = sortPerms(v)
	case "-k":
		r.Key = v
	case "-a", "-A", "-d":
		list, action, err := listAction(v)
		if err != nil {
			return err
		}
		r.Kind = map[string]string{"-a": "syscall", "-A": "syscall", "-d": "delete"}[a]
		r.List, r.Action = list, action
	case "-S":
		for _, s := range strings.Split(v, ",") {
			if s != "" && !slices.Contains(r.Syscalls, s) {
				r.Syscalls = append(r.Syscalls, s)
			}
		}
	case "-F":
		return applyField(r, v)
	case "-C":
		// A comparison of two fields (auid!=uid): kept as written.
		r.Fields = append(r.Fields, facts.AuditField{Name: "compare", Op: "", Value: v})
	}
	// The control options with a value (-b, -e, -f, -r, -s,
	// --backlog_wait_time) set what Text keeps.
	return nil
}

// applyField records one -F field in r; key, path, dir, perm and arch also
// say what the rule is.
func applyField(r *facts.AuditRule, v string) error {
	f, err := parseField(v)
	if err != nil {
		return err
	}
	switch f.Name {
	case "key":
		r.Key = f.Value
		return nil
	case "path", "dir":
		r.Path = f.Value
	case "perm":
		if strings.Trim(f.Value, "rwxa") != "" || f.Op != "=" {
			return fmt.Errorf("-F %q: perm= takes r, w, x and a", v)
		}
		r.Perms = sortPerms(f.Value)
	case "arch":
		r.Arch = f.Value
	}
	r.Fields = append(r.Fields, f)
	return nil
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
