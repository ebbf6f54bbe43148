package textfile

import (
	"fmt"
	"strings"
)

// maxShellValue bounds one assigned value, so that expanding a variable into
// itself over and over in a crafted file cannot grow without limit.
const maxShellValue = 64 << 10

// Assignment is one variable assignment a shell-style file makes, and the
// line it starts on.
type Assignment struct {
	Name, Value string
	Line        int
}

// ParseShell reads the variable assignments of a shell-style file such as
// os-release or /etc/default/grub into vars and returns them, in order. It understands single and double quotes, backslash
// escapes and continuations, comments and an "export" prefix; with expand it
// also substitutes $NAME and ${NAME} from vars, which grub drop-ins rely on
// ("GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT x\""). Anything
// that is not an assignment (if, fi, commands) is skipped: these files are
// sourced by a shell, and we only want what they set. It never runs anything.
func ParseShell(data []byte, vars map[string]string, expand bool) ([]Assignment, error) {
	p := &shellParser{s: string(data), line: 1, vars: vars, expand: expand}
	var assigned []Assignment
	for {
		p.skipBlank()
		if p.i >= len(p.s) {
			return assigned, nil
		}
		if p.s[p.i] == '#' {
			p.skipComment()
			continue
		}
		if strings.HasPrefix(p.s[p.i:], "export ") || strings.HasPrefix(p.s[p.i:], "export\t") {
			p.i += len("export ")
			continue
		}
		line := p.line
		name, ok := p.assignmentName()
		if !ok {
			if err := p.skipCommand(); err != nil {
				return assigned, err
			}
			continue
		}
		val, err := p.value()
		if err != nil {
			return assigned, err
		}
		vars[name] = val
		assigned = append(assigned, Assignment{Name: name, Value: val, Line: line})
	}
}

type shellParser struct {
	s      string
	i      int
	line   int
	vars   map[string]string
	expand bool
}

func (p *shellParser) skipBlank() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case '\n':
			p.line++
		case ' ', '\t', '\r', ';':
		default:
			return
		}
		p.i++
	}
}

func (p *shellParser) skipComment() {
	for p.i < len(p.s) && p.s[p.i] != '\n' {
		p.i++
	}
}

func isNameStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isNameChar(c byte) bool { return isNameStart(c) || (c >= '0' && c <= '9') }

// assignmentName consumes NAME= when the next word is an assignment.
func (p *shellParser) assignmentName() (string, bool) {
	j := p.i
	if j >= len(p.s) || !isNameStart(p.s[j]) {
		return "", false
	}
	for j < len(p.s) && isNameChar(p.s[j]) {
		j++
	}
	if j >= len(p.s) || p.s[j] != '=' {
		return "", false
	}
	name := p.s[p.i:j]
	p.i = j + 1
	return name, true
}

// skipCommand skips to the end of a command that is not an assignment,
// honouring quotes so that a quoted newline or ';' does not end it early.
func (p *shellParser) skipCommand() error {
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch c {
		case '\n', ';':
			return nil
		case '#':
			// A '#' starts a comment only at the start of a word.
			if p.i == 0 || p.s[p.i-1] == ' ' || p.s[p.i-1] == '\t' {
				p.skipComment()
				return nil
			}
			p.i++
		case '\\':
			if p.i+1 < len(p.s) && p.s[p.i+1] == '\n' {
				p.line++
			}
			p.i += 2
		case '\'', '"':
			start := p.line
			p.i++
			for p.i < len(p.s) && p.s[p.i] != c {
				if c == '"' && p.s[p.i] == '\\' {
					p.i++
				}
				if p.i < len(p.s) && p.s[p.i] == '\n' {
					p.line++
				}
				p.i++
			}
			if p.i >= len(p.s) {
				return fmt.Errorf("line %d: unterminated %c quote", start, c)
			}
			p.i++
		default:
			p.i++
		}
	}
	return nil
}

// value reads the right-hand side of an assignment up to unquoted blank.
func (p *shellParser) value() (string, error) {
	var b strings.Builder
	for p.i < len(p.s) {
		if b.Len() > maxShellValue {
			return "", fmt.Errorf("line %d: value longer than %d bytes", p.line, maxShellValue)
		}
		c := p.s[p.i]
		switch c {
		case ' ', '\t', '\r', '\n', ';':
			return b.String(), nil
		case '\\':
			p.i++
			if p.i < len(p.s) {
				if p.s[p.i] == '\n' {
					p.line++
				} else {
					b.WriteByte(p.s[p.i])
				}
				p.i++
			}
		case '\'':
			start := p.line
			end := strings.IndexByte(p.s[p.i+1:], '\'')
			if end < 0 {
				return "", fmt.Errorf("line %d: unterminated ' quote", start)
			}
			lit := p.s[p.i+1 : p.i+1+end]
			p.line += strings.Count(lit, "\n")
			b.WriteString(lit)
			p.i += end + 2
		case '"':
			if err := p.doubleQuoted(&b); err != nil {
				return "", err
			}
		case '$':
			if p.expand {
				b.WriteString(p.expansion())
			} else {
				b.WriteByte(c)
				p.i++
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return b.String(), nil
}

func (p *shellParser) doubleQuoted(b *strings.Builder) error {
	start := p.line
	p.i++ // opening quote
	for p.i < len(p.s) {
		if b.Len() > maxShellValue {
			return fmt.Errorf("line %d: value longer than %d bytes", start, maxShellValue)
		}
		c := p.s[p.i]
		switch c {
		case '"':
			p.i++
			return nil
		case '\\':
			if p.i+1 < len(p.s) {
				n := p.s[p.i+1]
				switch n {
				case '"', '\\', '$', '`':
					b.WriteByte(n)
				case '\n':
					p.line++
				default:
					b.WriteByte('\\')
					b.WriteByte(n)
				}
				p.i += 2
				continue
			}
			b.WriteByte(c)
			p.i++
		case '$':
			if p.expand {
				b.WriteString(p.expansion())
				continue
			}
			b.WriteByte(c)
			p.i++
		default:
			if c == '\n' {
				p.line++
			}
			b.WriteByte(c)
			p.i++
		}
	}
	return fmt.Errorf("line %d: unterminated \" quote", start)
}

// expansion consumes $NAME or ${NAME} (with an optional :-default) and
// returns its value; anything else after '$' is kept literally.
func (p *shellParser) expansion() string {
	p.i++ // '$'
	if p.i < len(p.s) && p.s[p.i] == '{' {
		end := strings.IndexByte(p.s[p.i:], '}')
		if end < 0 {
			return "${"
		}
		inner := p.s[p.i+1 : p.i+end]
		p.i += end + 1
		name, def, hasDef := strings.Cut(inner, ":-")
		if v, ok := p.vars[name]; ok && (v != "" || !hasDef) {
			return v
		}
		return def
	}
	j := p.i
	for j < len(p.s) && isNameChar(p.s[j]) {
		j++
	}
	if j == p.i {
		return "$"
	}
	name := p.s[p.i:j]
	p.i = j
	return p.vars[name]
}
