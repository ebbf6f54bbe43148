package tls

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/facts/collect/textfile"
)

// NginxDefaultProtocols is what nginx >= 1.23.4 enables when a server
// listens with ssl and no ssl_protocols applies to it.
var NginxDefaultProtocols = []string{"TLSv1.2", "TLSv1.3"}

// nginxPrefix is the directory nginx resolves relative include paths against
// (its --conf-path directory on Debian and Ubuntu).
const nginxPrefix = "/etc/nginx"

// maxNginxDirectives bounds the directives of one configuration, includes
// and all, and maxNginxNesting the depth of nested blocks.
const (
	maxNginxDirectives = 200000
	maxNginxNesting    = 64
)

// NginxDirective is one directive, with its block when it has one. File is
// the display path of the file it came from.
type NginxDirective struct {
	Name  string
	Args  []string
	File  string
	Line  int
	Block []*NginxDirective
	// HasBlock is true for "name args { ... }", even when the block is empty.
	HasBlock bool
}

// NginxConfig is a parsed nginx configuration with includes expanded in place.
type NginxConfig struct {
	Directives []*NginxDirective
	// Files lists the files read, the main one first, with display paths.
	Files []string
}

// ParseNginx parses one nginx configuration buffer; include directives are
// kept as they are, not followed.
func ParseNginx(data []byte) (*NginxConfig, error) {
	dirs, err := parseNginxFile("nginx.conf", data)
	if err != nil {
		return nil, err
	}
	return &NginxConfig{Directives: dirs, Files: []string{"nginx.conf"}}, nil
}

// LoadNginx reads name from src and expands its include directives, whose
// globs are relative to /etc/nginx. An include cycle is an error.
func LoadNginx(src textfile.Source, name string) (*NginxConfig, error) {
	return LoadNginxAt(src, name, nginxPrefix)
}

// LoadNginxAt is LoadNginx with relative include paths resolved against
// prefix: nginx takes them from the directory of the file its -c names.
func LoadNginxAt(src textfile.Source, name, prefix string) (*NginxConfig, error) {
	l := &nginxLoader{src: src, cfg: &NginxConfig{}, prefix: prefix}
	dirs, err := l.load(name, nil)
	if err != nil {
		return nil, err
	}
	l.cfg.Directives = dirs
	return l.cfg, nil
}

type nginxLoader struct {
	src    textfile.Source
	cfg    *NginxConfig
	count  int
	prefix string
}

// load parses one file and splices its includes in. stack holds the files
// being included, to refuse cycles.
func (l *nginxLoader) load(name string, stack []string) ([]*NginxDirective, error) {
	display := l.src.Display(name)
	if len(stack) > textfile.MaxIncludeDepth {
		return nil, fmt.Errorf("parsing %s: includes nested deeper than %d", display, textfile.MaxIncludeDepth)
	}
	for _, s := range stack {
		if s == name {
			return nil, fmt.Errorf("parsing %s: include cycle", display)
		}
	}
	if len(l.cfg.Files) >= textfile.MaxIncludeFiles {
		return nil, fmt.Errorf("parsing %s: more than %d included files", display, textfile.MaxIncludeFiles)
	}
	data, err := textfile.ReadText(l.src, name)
	if err != nil {
		return nil, err
	}
	l.cfg.Files = append(l.cfg.Files, display)
	dirs, err := parseNginxFile(display, data)
	if err != nil {
		return nil, err
	}
	return l.expand(dirs, append(stack, name))
}

func (l *nginxLoader) expand(dirs []*NginxDirective, stack []string) ([]*NginxDirective, error) {
	out := make([]*NginxDirective, 0, len(dirs))
	for _, d := range dirs {
		l.count++
		if l.count > maxNginxDirectives {
			return nil, fmt.Errorf("parsing %s: more than %d directives", d.File, maxNginxDirectives)
		}
		if d.Name == "include" && !d.HasBlock {
			if len(d.Args) != 1 {
				return nil, fmt.Errorf("parsing %s:%d: include takes one argument", d.File, d.Line)
			}
			files, err := textfile.GlobSorted(l.src, l.prefix, d.Args[0])
			if err != nil {
				return nil, fmt.Errorf("parsing %s:%d: %w", d.File, d.Line, err)
			}
			for _, f := range files {
				sub, err := l.load(f, stack)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: include: %w", d.File, d.Line, err)
				}
				out = append(out, sub...)
			}
			continue
		}
		if d.HasBlock {
			sub, err := l.expand(d.Block, stack)
			if err != nil {
				return nil, err
			}
			d.Block = sub
		}
		out = append(out, d)
	}
	return out, nil
}

// nginxToken is one word, or one of ";", "{", "}" (quoted words never are).
type nginxToken struct {
	text   string
	quoted bool
	line   int
}

func (t nginxToken) special(c string) bool { return !t.quoted && t.text == c }

// tokenizeNginx splits data the way nginx's ngx_conf_read_token does, closely
// enough for our purpose: whitespace separates words, ";{}" stand alone,
// quotes group, a backslash escapes the next byte, and # starts a comment
// at the start of a word.
func tokenizeNginx(data []byte) ([]nginxToken, error) {
	var toks []nginxToken
	line := 1
	s := data
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == ';' || c == '{' || c == '}':
			toks = append(toks, nginxToken{text: string(c), line: line})
			i++
		case c == '"' || c == '\'':
			start := line
			var b strings.Builder
			i++
			for {
				if i >= len(s) {
					return nil, fmt.Errorf("line %d: unterminated quote", start)
				}
				if s[i] == c {
					i++
					break
				}
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == c || s[i+1] == '\\') {
					i++
				}
				if s[i] == '\n' {
					line++
				}
				b.WriteByte(s[i])
				i++
			}
			// nginx wants a separator right after a closing quote.
			if i < len(s) && !isNginxSep(s[i]) {
				return nil, fmt.Errorf("line %d: unexpected %q after quoted string", line, s[i])
			}
			toks = append(toks, nginxToken{text: b.String(), quoted: true, line: start})
		default:
			start := line
			var b strings.Builder
			for i < len(s) && !isNginxSep(s[i]) {
				if s[i] == '\\' && i+1 < len(s) {
					// The escape stays in the word, as nginx keeps it.
					b.WriteByte(s[i])
					i++
					if s[i] == '\n' {
						line++
					}
				}
				b.WriteByte(s[i])
				i++
			}
			toks = append(toks, nginxToken{text: b.String(), line: start})
		}
	}
	return toks, nil
}

func isNginxSep(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';' || c == '{' || c == '}'
}

// parseNginxFile parses one file's text into directives; file names the file
// in errors and in each directive.
func parseNginxFile(file string, data []byte) ([]*NginxDirective, error) {
	toks, err := tokenizeNginx(data)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", file, err)
	}
	p := nginxParser{toks: toks, file: file}
	dirs, err := p.block(0)
	if err != nil {
		return nil, fmt.Errorf("parsing %s:%w", file, err)
	}
	return dirs, nil
}

type nginxParser struct {
	toks []nginxToken
	pos  int
	file string
}

var errNginxEOF = errors.New(`unexpected end of file, expecting ";" or "}"`)

// block parses directives until the closing brace (depth > 0) or the end of
// input (depth 0).
func (p *nginxParser) block(depth int) ([]*NginxDirective, error) {
	if depth > maxNginxNesting {
		return nil, fmt.Errorf("%d: blocks nested deeper than %d", p.lineAt(), maxNginxNesting)
	}
	var dirs []*NginxDirective
	for {
		if p.pos >= len(p.toks) {
			if depth > 0 {
				return nil, fmt.Errorf("%d: %w", p.lastLine(), errNginxEOF)
			}
			return dirs, nil
		}
		t := p.toks[p.pos]
		switch {
		case t.special("}"):
			if depth == 0 {
				return nil, fmt.Errorf(`%d: unexpected "}"`, t.line)
			}
			p.pos++
			return dirs, nil
		case t.special(";"), t.special("{"):
			return nil, fmt.Errorf("%d: unexpected %q", t.line, t.text)
		}
		d := &NginxDirective{Name: t.text, File: p.file, Line: t.line}
		p.pos++
	args:
		for {
			if p.pos >= len(p.toks) {
				return nil, fmt.Errorf("%d: %w", p.lastLine(), errNginxEOF)
			}
			a := p.toks[p.pos]
			p.pos++
			switch {
			case a.special(";"):
				break args
			case a.special("{"):
				sub, err := p.block(depth + 1)
				if err != nil {
					return nil, err
				}
				d.Block, d.HasBlock = sub, true
				break args
			case a.special("}"):
				return nil, fmt.Errorf(`%d: unexpected "}"`, a.line)
			default:
				d.Args = append(d.Args, a.text)
			}
		}
		dirs = append(dirs, d)
	}
}

func (p *nginxParser) lineAt() int {
	if p.pos < len(p.toks) {
		return p.toks[p.pos].line
	}
	return p.lastLine()
}

func (p *nginxParser) lastLine() int {
	if len(p.toks) == 0 {
		return 1
	}
	return p.toks[len(p.toks)-1].line
}

// NginxTLSSetting is one ssl_protocols directive, or a server that listens
// with ssl and inherits no ssl_protocols (Default true, nginx's default
// protocols, at the line of its listen directive).
type NginxTLSSetting struct {
	File      string
	Line      int
	Protocols []string
	Default   bool
}

// TLSSettings lists every ssl_protocols directive in file order, then, for
// each server block that serves TLS without ssl_protocols in itself or in its
// enclosing http/stream/mail block, an entry with nginx's default protocols.
func (c *NginxConfig) TLSSettings() []NginxTLSSetting {
	out := []NginxTLSSetting{}
	var walk func(dirs []*NginxDirective, depth int)
	walk = func(dirs []*NginxDirective, depth int) {
		for _, d := range dirs {
			if d.Name == "ssl_protocols" && !d.HasBlock {
				out = append(out, NginxTLSSetting{File: d.File, Line: d.Line, Protocols: append([]string{}, d.Args...)})
			}
			if d.HasBlock && depth < maxNginxNesting {
				walk(d.Block, depth+1)
			}
		}
	}
	walk(c.Directives, 0)

	var defaults func(dirs []*NginxDirective, depth int)
	defaults = func(dirs []*NginxDirective, depth int) {
		for _, d := range dirs {
			if !d.HasBlock || depth >= maxNginxNesting {
				continue
			}
			switch d.Name {
			case "http", "stream", "mail":
				outer := hasDirective(d.Block, "ssl_protocols")
				for _, s := range d.Block {
					if s.Name != "server" || !s.HasBlock || outer || hasDirective(s.Block, "ssl_protocols") {
						continue
					}
					if at := sslListen(s.Block); at != nil {
						out = append(out, NginxTLSSetting{
							File: at.File, Line: at.Line,
							Protocols: append([]string{}, NginxDefaultProtocols...), Default: true,
						})
					}
				}
			default:
				defaults(d.Block, depth+1)
			}
		}
	}
	defaults(c.Directives, 0)
	return out
}

func hasDirective(dirs []*NginxDirective, name string) bool {
	for _, d := range dirs {
		if d.Name == name && !d.HasBlock {
			return true
		}
	}
	return false
}

// sslListen returns the directive that makes a server speak TLS: the first
// "listen ... ssl", else an "ssl on".
func sslListen(dirs []*NginxDirective) *NginxDirective {
	var sslOn *NginxDirective
	for _, d := range dirs {
		if d.HasBlock {
			continue
		}
		switch d.Name {
		case "listen":
			for _, a := range d.Args[min(1, len(d.Args)):] {
				if a == "ssl" {
					return d
				}
			}
		case "ssl":
			if sslOn == nil && len(d.Args) == 1 && strings.EqualFold(d.Args[0], "on") {
				sslOn = d
			}
		}
	}
	return sslOn
}

// NginxServerName is one name a server that serves TLS answers to, on one
// of its ports.
type NginxServerName struct {
	Name string
	// Address is the listen directive's address, empty for a wildcard
	// (nginx then serves the name at every address of the port).
	Address string
	Port    int
	File    string
	Line    int
}

// ServerNames lists, for every server block that serves TLS, each exact
// name of its server_name directives on each port it serves TLS on, in
// file order. A name with a wildcard or a regular expression, the catch-all
// "_" and variables name no host a client asks for, and are left out;
// ".example.com" is taken as example.com, which it also matches.
func (c *NginxConfig) ServerNames() []NginxServerName {
	var out []NginxServerName
	var walk func(dirs []*NginxDirective, depth int)
	walk = func(dirs []*NginxDirective, depth int) {
		for _, d := range dirs {
			if !d.HasBlock || depth >= maxNginxNesting {
				continue
			}
			if d.Name != "server" {
				walk(d.Block, depth+1)
				continue
			}
			listens := tlsListensOf(d.Block)
			for _, n := range d.Block {
				if n.Name != "server_name" || n.HasBlock {
					continue
				}
				for _, a := range n.Args {
					name, ok := exactServerName(a)
					if !ok {
						continue
					}
					for _, l := range listens {
						out = append(out, NginxServerName{Name: name, Address: l.host, Port: l.port, File: n.File, Line: n.Line})
					}
				}
			}
		}
	}
	walk(c.Directives, 0)
	return out
}

// listenAt is where a listen directive listens: an address ("" for a
// wildcard) and a port.
type listenAt struct {
	host string
	port int
}

// tlsListensOf is where a server block serves TLS: its "listen ... ssl"
// directives, or every listen where "ssl on" is set.
func tlsListensOf(dirs []*NginxDirective) []listenAt {
	sslOn := false
	for _, d := range dirs {
		if d.Name == "ssl" && !d.HasBlock && len(d.Args) == 1 && strings.EqualFold(d.Args[0], "on") {
			sslOn = true
		}
	}
	var out []listenAt
	for _, d := range dirs {
		if d.Name != "listen" || d.HasBlock || len(d.Args) == 0 {
			continue
		}
		if !sslOn && !slices.Contains(d.Args[1:], "ssl") {
			continue
		}
		if l, ok := parseListen(d.Args[0]); ok && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// parseListen reads a listen directive's address: "443", "*:443",
// "10.0.0.1:443", "[::]:443", or an address alone, which nginx takes as
// port 80. The wildcards are "". A UNIX socket is none.
func parseListen(addr string) (listenAt, bool) {
	if strings.HasPrefix(addr, "unix:") {
		return listenAt{}, false
	}
	if p, err := strconv.Atoi(addr); err == nil {
		return listenAt{port: p}, p > 0 && p <= 65535
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = strings.Trim(addr, "[]"), "80"
	}
	p, err := strconv.Atoi(port)
	if host == "*" || host == "::" || host == "0.0.0.0" {
		host = ""
	}
	return listenAt{host: host, port: p}, err == nil && p > 0 && p <= 65535
}

// exactServerName reads one server_name argument as a host name a client
// asks for, lower case.
func exactServerName(a string) (string, bool) {
	a = strings.ToLower(strings.TrimPrefix(a, "."))
	if a == "" || a == "_" || strings.ContainsAny(a, "*~$") {
		return "", false
	}
	return a, true
}
