// Package boundedyaml decodes the YAML an operator writes (params, waivers)
// within limits that hold before the YAML library expands anything. A
// file under the size cap can still nest flow collections a million deep,
// which the parser follows by recursion, or define aliases of aliases whose
// expansion ("billion laughs") the decoder builds in full. Here the tokens
// are checked for nesting before parsing, and the tree for depth and for
// its size with every alias expanded before decoding. Errors name the file,
// line and column, and never quote the file's text: a mistyped path
// (`--waivers /etc/passwd`) must not print someone else's file.
package boundedyaml

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

const (
	// MaxDepth is how deeply collections may nest.
	MaxDepth = 64
	// MaxNodes bounds the decoded value: the nodes of the document with
	// every alias expanded where it is used.
	MaxNodes = 100_000
)

// ErrLimit is wrapped by the error for input past MaxDepth or MaxNodes.
var ErrLimit = errors.New("over a YAML limit")

// Decode decodes the one YAML document in data into v, with opts passed to
// the decoder. name is the file, for errors. Empty input leaves v alone.
func Decode(name string, data []byte, v any, opts ...yaml.DecodeOption) (err error) {
	body, err := Parse(name, data)
	if err != nil || body == nil {
		return err
	}
	return Value(name, body, v, opts...)
}

// Value decodes body, as Parse returned it, into v.
func Value(name string, body ast.Node, v any, opts ...yaml.DecodeOption) (err error) {
	defer recovered(name, &err)
	if err := yaml.NodeToValue(body, v, opts...); err != nil {
		return clean(name, err)
	}
	return nil
}

// Parse parses the one YAML document in data within the limits and returns
// its body, nil for an empty document. name is the file, for errors.
func Parse(name string, data []byte) (body ast.Node, err error) {
	defer recovered(name, &err)
	tokens := lexer.Tokenize(string(data))
	if err := checkTokens(name, tokens); err != nil {
		return nil, err
	}
	file, err := parser.Parse(tokens, 0)
	if err != nil {
		return nil, clean(name, err)
	}
	for _, doc := range file.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if body != nil {
			return nil, fmt.Errorf("%s: more than one YAML document; one is expected", name)
		}
		body = doc.Body
	}
	if body == nil {
		return nil, nil
	}
	w := walker{name: name, anchors: map[string]int{}}
	if _, err := w.size(body, 0); err != nil {
		return nil, err
	}
	return body, nil
}

// recovered turns a panic of the YAML library into an error: it has
// panicked on odd input (a bare tag before a scalar), which is bad input,
// not a crash. The panic value may quote the input, so it is not repeated.
func recovered(name string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s: malformed YAML (the YAML library failed on it)", name)
	}
}

// checkTokens bounds flow nesting, which the parser would otherwise follow
// as deep as the brackets go.
func checkTokens(name string, tokens token.Tokens) error {
	depth := 0
	for _, tk := range tokens {
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			depth++
			if depth > MaxDepth {
				return fmt.Errorf("%s%s: collections nested more than %d deep: %w", name, at(tk), MaxDepth, ErrLimit)
			}
		case token.SequenceEndType, token.MappingEndType:
			depth--
		}
	}
	return nil
}

// walker measures a parsed document. anchors holds the expanded size of
// each anchor defined so far, by name: an alias refers to the latest one
// before it, and a redefinition replaces it.
type walker struct {
	name    string
	anchors map[string]int
}

// size returns the node count of n with its aliases expanded, saturating
// just past MaxNodes, and fails at the first collection nested past
// MaxDepth (depth counts the collections around n) or whose expansion
// passes MaxNodes. Each node is visited once: an alias
// adds its anchor's recorded size instead of walking it again.
func (w *walker) size(n ast.Node, depth int) (int, error) {
	if n == nil {
		return 0, nil
	}
	self, inner := 1, depth
	var kids []ast.Node
	switch x := n.(type) {
	case *ast.MappingNode:
		inner = depth + 1
		for _, mv := range x.Values {
			kids = append(kids, mv.Key, mv.Value)
		}
	case *ast.MappingValueNode:
		// A mapping of one key can come without its MappingNode.
		inner = depth + 1
		kids = []ast.Node{x.Key, x.Value}
	case *ast.SequenceNode:
		inner = depth + 1
		kids = x.Values
	}
	if inner > MaxDepth {
		return 0, fmt.Errorf("%s%s: collections nested more than %d deep: %w", w.name, at(n.GetToken()), MaxDepth, ErrLimit)
	}
	switch x := n.(type) {
	case *ast.MappingKeyNode:
		self, kids = 0, []ast.Node{x.Value}
	case *ast.TagNode:
		self, kids = 0, []ast.Node{x.Value}
	case *ast.AnchorNode:
		s, err := w.size(x.Value, depth)
		if err == nil && x.Name != nil {
			w.anchors[x.Name.String()] = s
		}
		return s, err
	case *ast.AliasNode:
		if x.Value == nil {
			return 1, nil
		}
		return max(w.anchors[x.Value.String()], 1), nil
	}
	total := self
	for _, k := range kids {
		s, err := w.size(k, inner)
		if err != nil {
			return 0, err
		}
		total = min(total+s, MaxNodes+1)
		if total > MaxNodes {
			return 0, fmt.Errorf("%s%s: more than %d nodes once aliases are expanded: %w", w.name, at(n.GetToken()), MaxNodes, ErrLimit)
		}
	}
	return total, nil
}

// at is ":LINE:COL" for a token, or nothing without a position.
func at(tk *token.Token) string {
	if tk == nil || tk.Position == nil {
		return ""
	}
	return fmt.Sprintf(":%d:%d", tk.Position.Line, tk.Position.Column)
}

// quoted finds what the YAML library quotes from the input in a message.
var quoted = regexp.MustCompile(`"[^"]*"`)

// keyish is a quoted value that can be repeated: a key as a person would
// write one, not a line of some other file.
var keyish = regexp.MustCompile(`^"[A-Za-z0-9_.-]{1,64}"$`)

// clean turns a YAML library error into "file:line:col: message" without
// the source excerpt the library prints, and without quoting text unless
// it looks like a key.
func clean(name string, err error) error {
	hide := func(msg string) string {
		msg, _, _ = strings.Cut(msg, "\n")
		return quoted.ReplaceAllStringFunc(msg, func(q string) string {
			if keyish.MatchString(q) {
				return q
			}
			return "(text not shown)"
		})
	}
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return fmt.Errorf("%s: %s", name, hide(err.Error()))
	}
	return fmt.Errorf("%s%s: %s", name, at(ye.GetToken()), hide(ye.GetMessage()))
}
