package access

import (
	"fmt"
	"path"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	sudoersPath = "/etc/sudoers"
	// maxSudoersFile bounds one sudoers file.
	maxSudoersFile = 1 << 20
	// maxIncludeDepth is sudo's own limit on nested includes.
	maxIncludeDepth = 128
	// maxSudoFiles bounds the files one sudoers may include in all.
	maxSudoFiles = 1024
	// maxSudoRules bounds the rules and settings of one sudoers.
	maxSudoRules = 100000
)

// sudoTags are the command tags of sudoers(5); a tag holds for the
// commands after it in the same specification until another replaces it.
var sudoTags = map[string]bool{
	"NOPASSWD": true, "PASSWD": true, "NOEXEC": true, "EXEC": true, "SETENV": true, "NOSETENV": true,
	"LOG_INPUT": true, "NOLOG_INPUT": true, "LOG_OUTPUT": true, "NOLOG_OUTPUT": true, "MAIL": true,
	"NOMAIL": true, "FOLLOW": true, "NOFOLLOW": true, "INTERCEPT": true, "NOINTERCEPT": true,
}

// sudoOptions are the "NAME=value" options a command may carry before it.
var sudoOptions = []string{"ROLE=", "TYPE=", "CWD=", "CHROOT=", "NOTBEFORE=", "NOTAFTER=", "TIMEOUT=", "APPARMOR_PROFILE=", "PRIVS=", "LIMITPRIVS="}

// sudoersParser reads sudoers and its includes into one Sudo.
type sudoersParser struct {
	fs      sysroot.FS
	sudo    *facts.Sudo
	aliases map[string]map[string][]string // kind -> name -> items
	seen    map[string]bool
}

// LoadSudoers reads /etc/sudoers and what it includes. It returns nil
// when the target has no sudoers: no sudo is installed.
func LoadSudoers(fsys sysroot.FS) (*facts.Sudo, error) {
	if _, err := fsys.Stat(sudoersPath); sysroot.IsNotExist(err) {
		return nil, nil
	}
	p := &sudoersParser{fs: fsys, sudo: &facts.Sudo{Files: []string{}, Rules: []facts.SudoRule{}, Defaults: []facts.SudoDefault{}},
		aliases: map[string]map[string][]string{}, seen: map[string]bool{}}
	if err := p.file(sudoersPath, 0); err != nil {
		return nil, err
	}
	return p.sudo, nil
}

// ParseSudoers parses one sudoers buffer; include lines are not followed.
func ParseSudoers(display string, data []byte) (*facts.Sudo, error) {
	p := &sudoersParser{sudo: &facts.Sudo{Files: []string{display}, Rules: []facts.SudoRule{}, Defaults: []facts.SudoDefault{}},
		aliases: map[string]map[string][]string{}, seen: map[string]bool{}}
	return p.sudo, p.parse(display, "", data, -1)
}

func (p *sudoersParser) file(name string, depth int) error {
	if depth > maxIncludeDepth {
		return fmt.Errorf("%s: includes nested deeper than %d", p.fs.Display(name), maxIncludeDepth)
	}
	if p.seen[name] {
		// sudo refuses an include loop too.
		return fmt.Errorf("%s: included twice (an include loop)", p.fs.Display(name))
	}
	p.seen[name] = true
	if len(p.sudo.Files) >= maxSudoFiles {
		return fmt.Errorf("%s: more than %d sudoers files", p.fs.Display(name), maxSudoFiles)
	}
	data, err := p.fs.ReadFileLimit(name, maxSudoersFile)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p.fs.Display(name), err)
	}
	p.sudo.Files = append(p.sudo.Files, p.fs.Display(name))
	return p.parse(p.fs.Display(name), name, data, depth)
}

// logicalLines joins lines ending in a backslash, keeping each logical
// line's first line number.
func logicalLines(data []byte) (out []string, nums []int) {
	var cur strings.Builder
	start := 0
	for i, l := range strings.Split(string(data), "\n") {
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(l, "\\") {
			cur.WriteString(strings.TrimSuffix(l, "\\"))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(l)
		out, nums = append(out, cur.String()), append(nums, start)
		cur.Reset()
	}
	if cur.Len() > 0 {
		out, nums = append(out, cur.String()), append(nums, start)
	}
	return out, nums
}

// stripComment drops a # comment; "#123" is a uid, not a comment.
func stripComment(l string) string {
	for i := 0; i < len(l); i++ {
		if l[i] == '\\' {
			i++
			continue
		}
		if l[i] == '#' && !(i+1 < len(l) && l[i+1] >= '0' && l[i+1] <= '9') {
			return l[:i]
		}
	}
	return l
}

// parse reads one file's lines; depth < 0 means includes are not followed.
func (p *sudoersParser) parse(display, name string, data []byte, depth int) error {
	ls, nums := logicalLines(data)
	for i, raw := range ls {
		line := strings.TrimSpace(raw)
		n := nums[i]
		if len(line) > maxLine {
			return fmt.Errorf("parsing %s line %d: longer than %d bytes", display, n, maxLine)
		}
		handled, err := p.include(display, name, n, line, depth)
		if err != nil {
			return err
		}
		if handled {
			continue
		}
		line = strings.TrimSpace(stripComment(line))
		if line == "" {
			continue
		}
		if err := p.statement(display, n, line); err != nil {
			return fmt.Errorf("parsing %s line %d: %w", display, n, err)
		}
		if len(p.sudo.Rules)+len(p.sudo.Defaults) > maxSudoRules {
			return fmt.Errorf("parsing %s: more than %d rules and settings", display, maxSudoRules)
		}
	}
	return nil
}

// include follows an #include, @include, #includedir or @includedir line
// and reports whether line was one; a relative path is relative to the
// including file, as sudo 1.9 reads it.
func (p *sudoersParser) include(display, name string, n int, line string, depth int) (bool, error) {
	for _, inc := range []string{"#includedir", "@includedir", "#include", "@include"} {
		rest, ok := strings.CutPrefix(line, inc)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		target := strings.Trim(strings.TrimSpace(rest), `"`)
		if target == "" {
			return true, fmt.Errorf("parsing %s line %d: %s needs a path", display, n, inc)
		}
		if depth < 0 {
			return true, nil
		}
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(name), target)
		}
		if strings.HasSuffix(inc, "includedir") {
			return true, p.includeDir(target, depth+1)
		}
		return true, p.file(target, depth+1)
	}
	return false, nil
}

// includeDir reads the files of an @includedir as sudo does: in name
// order, skipping names that end in ~ or contain a dot, so that editor
// backups and package leftovers are never read. A missing directory is
// no error.
func (p *sudoersParser) includeDir(dir string, depth int) error {
	entries, err := p.fs.ReadDir(dir)
	if sysroot.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", p.fs.Display(dir), err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "~") || strings.Contains(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		if err := p.file(path.Join(dir, e.Name()), depth); err != nil {
			return err
		}
	}
	return nil
}

// splitList splits at commas outside quotes, a backslash escaping the next
// character, trimming each item.
func splitList(s string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			cur.WriteByte(c)
			cur.WriteByte(s[i+1])
			i++
		case c == '"':
			quoted = !quoted
			cur.WriteByte(c)
		case c == ',' && !quoted:
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if t := strings.TrimSpace(cur.String()); t != "" || len(out) > 0 {
		out = append(out, t)
	}
	return out
}

var aliasKinds = map[string]string{"User_Alias": "user", "Runas_Alias": "runas", "Host_Alias": "host", "Cmnd_Alias": "cmnd", "Cmd_Alias": "cmnd"}

func (p *sudoersParser) statement(display string, n int, line string) error {
	word := firstWord(line)
	rest := strings.TrimSpace(line[len(word):])
	if kind, ok := aliasKinds[word]; ok {
		return p.alias(kind, rest)
	}
	if strings.HasPrefix(word, "Defaults") {
		return p.defaults(display, n, word, rest)
	}
	return p.userSpec(display, n, line)
}

// alias reads "NAME = a, b : NAME2 = c".
func (p *sudoersParser) alias(kind, rest string) error {
	for _, def := range strings.Split(rest, ":") {
		name, items, ok := strings.Cut(def, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return fmt.Errorf("alias %q: want NAME = items", strings.TrimSpace(def))
		}
		if p.aliases[kind] == nil {
			p.aliases[kind] = map[string][]string{}
		}
		p.aliases[kind][name] = p.expand(kind, splitList(items), 0)
	}
	return nil
}

// expand replaces alias names by their items, to a bounded depth.
func (p *sudoersParser) expand(kind string, items []string, depth int) []string {
	var out []string
	for _, it := range items {
		neg := strings.HasPrefix(it, "!")
		bare := strings.TrimPrefix(it, "!")
		if v, ok := p.aliases[kind][bare]; ok && depth < 16 {
			for _, e := range p.expand(kind, v, depth+1) {
				if neg {
					e = "!" + e
				}
				out = append(out, e)
			}
			continue
		}
		out = append(out, it)
	}
	return out
}

// defaults reads "Defaults[@:>!scope] name, !name, name=value, ...".
func (p *sudoersParser) defaults(display string, n int, word, rest string) error {
	scope := strings.TrimPrefix(word, "Defaults")
	if scope != "" && !strings.ContainsAny(scope[:1], "@:>!") {
		return fmt.Errorf("unknown keyword %q", word)
	}
	for _, item := range splitList(rest) {
		if item == "" {
			continue
		}
		d := facts.SudoDefault{File: display, Line: n, Scope: scope}
		if name, value, ok := strings.Cut(item, "="); ok {
			d.Name = strings.TrimRight(strings.TrimSpace(name), "+-")
			d.Value = strings.Trim(strings.TrimSpace(value), `"`)
		} else {
			d.Name = strings.TrimSpace(item)
		}
		if strings.HasPrefix(d.Name, "!") {
			d.Name, d.Negated = strings.TrimSpace(strings.TrimLeft(d.Name, "!")), true
		}
		p.sudo.Defaults = append(p.sudo.Defaults, d)
	}
	return nil
}

// userSpec reads "users hosts = [(runas)] [tags:] cmnd, ... [: hosts = ...]".
func (p *sudoersParser) userSpec(display string, n int, line string) error {
	eq := strings.IndexByte(line, '=')
	if eq < 0 {
		return fmt.Errorf("%q is neither a setting nor a rule (no =)", firstWord(line))
	}
	left := strings.Fields(strings.NewReplacer(", ", ",", " ,", ",").Replace(strings.TrimSpace(line[:eq])))
	if len(left) != 2 {
		return fmt.Errorf("want users and hosts before =, got %q", strings.TrimSpace(line[:eq]))
	}
	users := p.expand("user", splitList(left[0]), 0)
	hosts := p.expand("host", splitList(left[1]), 0)
	for _, section := range hostSections(line[eq+1:]) {
		r := facts.SudoRule{File: display, Line: n, Users: users, Hosts: hosts, RunAs: []string{}, Commands: []string{}}
		if section.hosts != nil {
			r.Hosts = p.expand("host", section.hosts, 0)
		}
		nopasswd := false
		for _, spec := range splitList(section.cmnds) {
			spec = strings.TrimSpace(spec)
			if strings.HasPrefix(spec, "(") {
				end := strings.IndexByte(spec, ')')
				if end < 0 {
					return fmt.Errorf("unclosed run-as list in %q", spec)
				}
				r.RunAs = p.expand("runas", splitList(spec[1:end]), 0)
				spec = strings.TrimSpace(spec[end+1:])
			}
			for {
				tag, after, ok := strings.Cut(spec, ":")
				if ok && sudoTags[strings.TrimSpace(tag)] {
					switch strings.TrimSpace(tag) {
					case "NOPASSWD":
						nopasswd = true
					case "PASSWD":
						nopasswd = false
					}
					spec = strings.TrimSpace(after)
					continue
				}
				if opt := optionPrefix(spec); opt != "" {
					_, after, _ := strings.Cut(spec, " ")
					spec = strings.TrimSpace(after)
					continue
				}
				break
			}
			if spec == "" {
				return fmt.Errorf("a rule for %s has an empty command", strings.Join(users, ","))
			}
			for _, c := range p.expand("cmnd", []string{spec}, 0) {
				r.Commands = append(r.Commands, c)
				if c == "ALL" {
					r.AllCommands = true
				}
				if nopasswd && !strings.HasPrefix(c, "!") {
					r.NoPasswd = true
				}
			}
		}
		if len(r.RunAs) == 0 {
			// Without a run-as list, sudo runs commands as root.
			r.RunAs = []string{"root"}
		}
		p.sudo.Rules = append(p.sudo.Rules, r)
	}
	return nil
}

func optionPrefix(spec string) string {
	for _, o := range sudoOptions {
		if strings.HasPrefix(spec, o) {
			return o
		}
	}
	return ""
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return s
}

type hostSection struct {
	hosts []string // nil for the first section, whose hosts precede it
	cmnds string
}

// hostSections splits "cmnds : hosts = cmnds" at a colon that follows a
// blank: a tag's colon ("NOPASSWD:") and a run-as pair ("(root:wheel)")
// never do.
func hostSections(s string) []hostSection {
	var out []hostSection
	cur := hostSection{}
	for {
		i := -1
		for j := 1; j < len(s); j++ {
			if s[j] == ':' && (s[j-1] == ' ' || s[j-1] == '\t') && strings.Contains(s[j+1:], "=") {
				i = j
				break
			}
		}
		if i < 0 {
			cur.cmnds = s
			return append(out, cur)
		}
		cur.cmnds = s[:i]
		out = append(out, cur)
		hosts, rest, _ := strings.Cut(s[i+1:], "=")
		cur = hostSection{hosts: splitList(strings.TrimSpace(hosts))}
		s = rest
	}
}
