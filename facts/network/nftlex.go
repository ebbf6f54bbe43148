package network

import (
	"fmt"
	"strings"

	"github.com/gpuhost/gpuhost/facts/collect/textfile"
)

// nftToken is a word, a string or one of { } ; , and a newline "\n".
type nftToken struct {
	text string
	line int
}

func tokenizeNft(data []byte) ([]nftToken, error) {
	s := string(data)
	var out []nftToken
	line := 1
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			out = append(out, nftToken{"\n", line})
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			line++
			i += 2
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '{' || c == '}' || c == ';' || c == ',':
			out = append(out, nftToken{string(c), line})
			i++
		case c == '"':
			end := strings.IndexByte(s[i+1:], '"')
			if end < 0 || strings.Contains(s[i+1:i+1+end], "\n") {
				return nil, fmt.Errorf("line %d: unterminated string", line)
			}
			out = append(out, nftToken{s[i : i+end+2], line})
			i += end + 2
		case c < 0x20 || c == 0x7f:
			return nil, fmt.Errorf("line %d: %w", line, textfile.ErrBinary)
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\r\n{};,#\"", rune(s[j])) && s[j] >= 0x20 && s[j] != 0x7f {
				j++
			}
			out = append(out, nftToken{s[i:j], line})
			i = j
		}
	}
	return out, nil
}

func (p *nftParser) include(pattern, from string, depth int) error {
	if !strings.HasPrefix(pattern, "/") {
		// nft resolves relative includes against its include path,
		// /etc by default on Debian and Ubuntu.
		pattern = "/etc/" + pattern
	}
	var names []string
	if strings.ContainsAny(pattern, "*?[") {
		m, err := p.fsys.Glob(pattern)
		if err != nil {
			return fmt.Errorf("expanding include %q: %w", pattern, err)
		}
		for _, n := range m {
			names = append(names, "/"+strings.TrimPrefix(n, "/"))
		}
	} else {
		names = []string{pattern}
	}
	for _, n := range names {
		found, err := p.file(n, depth+1)
		if err != nil {
			return err
		}
		if !found && !strings.ContainsAny(pattern, "*?[") {
			return fmt.Errorf("%s includes %s, which does not exist", from, n)
		}
	}
	return nil
}

func texts(toks []nftToken) []string {
	out := make([]string, 0, len(toks))
	for _, t := range toks {
		out = append(out, t.text)
	}
	return out
}

// statement reads one statement starting at pos: the tokens up to ';', a
// newline or a block. When a '{' follows the statement's first words of a
// table or chain or other declaration, the block's tokens are returned
// separately; inside a rule, braces are an anonymous set and stay in the
// statement. It returns the position after the statement.
func statement(toks []nftToken, pos int, decl bool) (stmt, block []nftToken, next int, err error) {
	for pos < len(toks) {
		t := toks[pos]
		switch t.text {
		case "\n", ";":
			return stmt, nil, pos + 1, nil
		case "}":
			return nil, nil, pos, fmt.Errorf("line %d: unbalanced '}'", t.line)
		case "{":
			end, err := matchBrace(toks, pos)
			if err != nil {
				return nil, nil, pos, err
			}
			if decl && len(stmt) > 0 && isDeclaration(stmt[0].text) && !flatRule(stmt) {
				return stmt, toks[pos+1 : end], end + 1, nil
			}
			// An anonymous set: keep its elements, drop the newlines.
			for _, in := range toks[pos : end+1] {
				if in.text != "\n" {
					stmt = append(stmt, in)
				}
			}
			pos = end + 1
		default:
			stmt = append(stmt, t)
			pos++
		}
	}
	return stmt, nil, pos, nil
}

// flatRule tells "add rule ..." and "add element ..." apart from other
// flat declarations: their braces are sets, not blocks.
func flatRule(stmt []nftToken) bool {
	return len(stmt) >= 2 && (stmt[1].text == "rule" || stmt[1].text == "element")
}

func isDeclaration(w string) bool {
	switch w {
	case "table", "chain", "set", "map", "flowtable", "counter", "quota", "limit", "ct", "secmark", "synproxy", "add", "create":
		return true
	}
	return false
}

// matchBrace returns the index of the '}' closing the '{' at pos.
func matchBrace(toks []nftToken, pos int) (int, error) {
	depth := 0
	for i := pos; i < len(toks); i++ {
		switch toks[i].text {
		case "{":
			depth++
			if depth > maxNestDepth {
				return 0, fmt.Errorf("line %d: braces nested deeper than %d", toks[i].line, maxNestDepth)
			}
		case "}":
			depth--
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("line %d: unclosed '{'", toks[pos].line)
}
