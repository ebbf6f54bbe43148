package tls

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// maxOpenSSLValue bounds one value after $var expansion: each line could
// otherwise double the previous one's length.
const maxOpenSSLValue = 64 << 10

// OpenSSLConfig is a parsed openssl.cnf with its includes resolved.
type OpenSSLConfig struct {
	// Sections maps a section name to its entries in file order. Entries
	// before the first header are in section "default".
	Sections map[string][]OpenSSLEntry
	// Files lists the files read, the main one first, with display paths.
	Files []string
}

// OpenSSLEntry is one name = value line after expansion.
type OpenSSLEntry struct {
	Name  string
	Value string
	// File and Line say where it was written, for reports that point at it.
	File string
	Line int
}

// OpenSSLSystemDefault is what the openssl_conf -> ssl_conf -> system_default
// chain sets. Empty fields are not set, so the library default applies.
type OpenSSLSystemDefault struct {
	// Section names the system_default section; empty when the chain breaks.
	Section string
	// MinProtocolAt is where MinProtocol was set; zero when it was not.
	MinProtocolAt OpenSSLEntry
	MinProtocol   string
	MaxProtocol   string
	CipherSuites  string
	CipherString  string
}

// Get returns the last value of name in section, as OpenSSL's own lookup
// does (a later line replaces an earlier one).
func (c *OpenSSLConfig) Get(section, name string) (string, bool) {
	entries := c.Sections[section]
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Name == name {
			return entries[i].Value, true
		}
	}
	return "", false
}

// SystemDefault follows the chain that libssl follows at initialisation.
func (c *OpenSSLConfig) SystemDefault() OpenSSLSystemDefault {
	var sd OpenSSLSystemDefault
	init, ok := c.Get("default", "openssl_conf")
	if !ok || c.Sections[init] == nil {
		return sd
	}
	sslSect, ok := c.Get(init, "ssl_conf")
	if !ok || c.Sections[sslSect] == nil {
		return sd
	}
	sysSect, ok := c.Get(sslSect, "system_default")
	if !ok || c.Sections[sysSect] == nil {
		return sd
	}
	sd.Section = sysSect
	// SSL_CONF_cmd matches file commands case-insensitively and applies
	// them in order, so the last one of each kind is in effect.
	for _, e := range c.Sections[sysSect] {
		switch strings.ToLower(e.Name) {
		case "minprotocol":
			sd.MinProtocol, sd.MinProtocolAt = e.Value, e
		case "maxprotocol":
			sd.MaxProtocol = e.Value
		case "ciphersuites":
			sd.CipherSuites = e.Value
		case "cipherstring":
			sd.CipherString = e.Value
		}
	}
	return sd
}

// ParseOpenSSL parses one openssl.cnf buffer; .include directives are noted
// but not followed.
func ParseOpenSSL(data []byte) (*OpenSSLConfig, error) {
	p := newOpenSSLParser(textfile.NoSource{})
	if err := p.parse("openssl.cnf", data, 0); err != nil {
		return nil, err
	}
	return p.cfg, nil
}

// LoadOpenSSL reads name from src and follows its .include directives
// (files or directories, relative to the including file's directory).
func LoadOpenSSL(src textfile.Source, name string) (*OpenSSLConfig, error) {
	data, err := textfile.ReadText(src, name)
	if err != nil {
		return nil, err
	}
	p := newOpenSSLParser(src)
	if err := p.parse(name, data, 0); err != nil {
		return nil, err
	}
	return p.cfg, nil
}

type openSSLParser struct {
	src     textfile.Source
	cfg     *OpenSSLConfig
	section string
	files   int
	// at is the line being parsed.
	at OpenSSLEntry
}

func newOpenSSLParser(src textfile.Source) *openSSLParser {
	return &openSSLParser{
		src:     src,
		cfg:     &OpenSSLConfig{Sections: map[string][]OpenSSLEntry{"default": nil}},
		section: "default",
	}
}

// parse reads one file. As in OpenSSL, an included file continues the
// section that was current at the .include line, and whatever section it
// ends in stays current afterwards.
func (p *openSSLParser) parse(name string, data []byte, depth int) error {
	display := p.src.Display(name)
	p.cfg.Files = append(p.cfg.Files, display)
	p.files++
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := strings.TrimRight(lines[i], "\r")
		// A trailing backslash (an odd run of them) continues the line.
		for continued(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimRight(lines[i], "\r")
		}
		if continued(line) {
			line = line[:len(line)-1]
		}
		p.at = OpenSSLEntry{File: display, Line: lineNo}
		if err := p.line(name, line, depth); err != nil {
			return fmt.Errorf("parsing %s:%d: %w", display, lineNo, err)
		}
	}
	return nil
}

func continued(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

func (p *openSSLParser) line(name, line string, depth int) error {
	s := strings.TrimLeft(line, " \t\f\v")
	if s == "" || s[0] == '#' || s[0] == ';' {
		return nil
	}
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return errors.New("missing closing ]")
		}
		sect := strings.TrimSpace(s[1:end])
		if sect == "" {
			return errors.New("empty section name")
		}
		p.section = sect
		if _, ok := p.cfg.Sections[sect]; !ok {
			p.cfg.Sections[sect] = nil
		}
		return nil
	}
	if dir, ok := directive(s, ".include"); ok {
		return p.include(name, dir, depth)
	}
	if _, ok := directive(s, ".pragma"); ok {
		return nil
	}
	eq := strings.IndexByte(s, '=')
	if eq < 0 {
		return errors.New("missing equal sign")
	}
	key := strings.TrimSpace(s[:eq])
	if key == "" {
		return errors.New("missing name before =")
	}
	val, err := p.value(s[eq+1:])
	if err != nil {
		return err
	}
	p.cfg.Sections[p.section] = append(p.cfg.Sections[p.section], OpenSSLEntry{Name: key, Value: val, File: p.at.File, Line: p.at.Line})
	return nil
}

// directive recognises ".include path" and ".include = path".
func directive(s, word string) (string, bool) {
	if !strings.HasPrefix(s, word) {
		return "", false
	}
	rest := s[len(word):]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '=' {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	rest = strings.TrimPrefix(rest, "=")
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		rest = rest[:i]
	}
	return strings.TrimSpace(rest), true
}

func (p *openSSLParser) include(name, target string, depth int) error {
	if target == "" {
		return errors.New(".include without a path")
	}
	if depth+1 > textfile.MaxIncludeDepth {
		return fmt.Errorf(".include %s: nesting deeper than %d", target, textfile.MaxIncludeDepth)
	}
	if !path.IsAbs(target) {
		target = path.Join(path.Dir("/"+name), target)
	}
	target = path.Clean(target)
	info, err := p.src.Stat(target)
	if err != nil {
		if sysroot.IsNotExist(err) {
			// OpenSSL goes on without a missing include.
			return nil
		}
		return err
	}
	files := []string{target}
	if info.IsDir() {
		// A directory contributes its *.cnf and *.conf files, not subdirectories.
		matches, err := p.src.Glob(target + "/*")
		if err != nil {
			return err
		}
		files = files[:0]
		for _, m := range matches {
			lower := strings.ToLower(m)
			if strings.HasSuffix(lower, ".cnf") || strings.HasSuffix(lower, ".conf") {
				files = append(files, path.Clean("/"+m))
			}
		}
	}
	for _, f := range files {
		if p.files >= textfile.MaxIncludeFiles {
			return fmt.Errorf(".include: more than %d files", textfile.MaxIncludeFiles)
		}
		data, err := textfile.ReadText(p.src, f)
		if err != nil {
			return err
		}
		if err := p.parse(f, data, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// value copies a value the way OpenSSL's str_copy does: quotes, backslash
// escapes, $var expansion, and a # comment ends it.
func (p *openSSLParser) value(s string) (string, error) {
	s = strings.TrimLeft(s, " \t\f\v")
	var b strings.Builder
	trailing := 0 // bytes of unquoted trailing whitespace, trimmed at the end
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '#':
			i = len(s)
			continue
		case c == '"' || c == '\'':
			i++
			for i < len(s) && s[i] != c {
				if s[i] == '\\' && c == '"' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
				i++
			}
			if i >= len(s) {
				return "", errors.New("unterminated quote")
			}
			i++
			trailing = 0
		case c == '\\':
			if i+1 >= len(s) {
				i++
				continue
			}
			b.WriteByte(unescape(s[i+1]))
			i += 2
			trailing = 0
		case c == '$':
			n, err := p.expand(&b, s[i:])
			if err != nil {
				return "", err
			}
			i += n
			trailing = 0
		default:
			b.WriteByte(c)
			i++
			if c == ' ' || c == '\t' || c == '\f' || c == '\v' {
				trailing++
			} else {
				trailing = 0
			}
		}
		if b.Len() > maxOpenSSLValue {
			return "", fmt.Errorf("value longer than %d bytes after expansion", maxOpenSSLValue)
		}
	}
	out := b.String()
	return out[:len(out)-trailing], nil
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 'b':
		return '\b'
	case 't':
		return '\t'
	}
	return c
}

// expand writes the value of the reference at the start of s ($name,
// ${name}, $(name), with an optional section:: prefix) and returns how many
// bytes it consumed. A reference with no value stays as written.
func (p *openSSLParser) expand(b *strings.Builder, s string) (int, error) {
	i := 1
	var closeCh byte
	if i < len(s) && (s[i] == '{' || s[i] == '(') {
		closeCh = '}'
		if s[i] == '(' {
			closeCh = ')'
		}
		i++
	}
	start := i
	for i < len(s) && isNameByte(s[i]) {
		i++
	}
	section, name := "", s[start:i]
	if strings.HasPrefix(s[i:], "::") {
		section = name
		i += 2
		start = i
		for i < len(s) && isNameByte(s[i]) {
			i++
		}
		name = s[start:i]
	}
	if closeCh != 0 {
		if i >= len(s) || s[i] != closeCh {
			// Not a well-formed reference: keep the text.
			b.WriteString(s[:i])
			return i, nil
		}
		i++
	}
	if name == "" {
		b.WriteString(s[:i])
		return i, nil
	}
	var val string
	var ok bool
	if section != "" {
		val, ok = p.cfg.Get(section, name)
	} else {
		if val, ok = p.cfg.Get(p.section, name); !ok {
			val, ok = p.cfg.Get("default", name)
		}
	}
	if !ok {
		b.WriteString(s[:i])
		return i, nil
	}
	if b.Len()+len(val) > maxOpenSSLValue {
		return 0, fmt.Errorf("value longer than %d bytes after expansion", maxOpenSSLValue)
	}
	b.WriteString(val)
	return i, nil
}

func isNameByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
