package fleet

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuhost/gpuhost/facts"
)

// maxShared bounds the converted members kept for reuse.
const maxShared = 128

// sharedMembers remembers OPA values converted from top-level members that
// facts.DecodeJSON shares between hosts (one image's package inventory,
// say): each is converted once, as OPA values are read-only during
// evaluation. Entries hold the decoded member, which keeps its
// facts.SharedKey naming it.
var sharedMembers = struct {
	sync.Mutex
	byKey map[any]sharedMember
}{byKey: map[any]sharedMember{}}

type sharedMember struct {
	decoded any
	value   ast.Value
}

// convertDecoded converts a decoded document to OPA's input, reusing the
// conversion of any top-level member seen before. The result equals
// ast.InterfaceToValue(decoded).
func convertDecoded(decoded any) (ast.Value, error) {
	obj, ok := decoded.(map[string]any)
	if !ok {
		return ast.InterfaceToValue(decoded)
	}
	items := make([][2]*ast.Term, 0, len(obj))
	for k, member := range obj {
		v, err := convertMember(member)
		if err != nil {
			return nil, err
		}
		items = append(items, ast.Item(ast.StringTerm(k), ast.NewTerm(v)))
	}
	return ast.NewObject(items...), nil
}

func convertMember(member any) (ast.Value, error) {
	key, ok := facts.SharedKey(member)
	if !ok {
		return ast.InterfaceToValue(member)
	}
	sharedMembers.Lock()
	e, hit := sharedMembers.byKey[key]
	sharedMembers.Unlock()
	if hit {
		return e.value, nil
	}
	v, err := ast.InterfaceToValue(member)
	if err != nil {
		return nil, err
	}
	sharedMembers.Lock()
	defer sharedMembers.Unlock()
	if len(sharedMembers.byKey) >= maxShared {
		clear(sharedMembers.byKey)
	}
	sharedMembers.byKey[key] = sharedMember{decoded: member, value: v}
	return v, nil
}

// projection is the shape of the parts of input some checks read: the
// members and fields on their paths, every member of a collection they
// step into each of, and the values they read whole.
type projection struct {
	whole    bool
	children map[string]*projection
	each     *projection
}

// add marks path as read, whole or only for its presence.
func (p *projection) add(path []step, whole bool) {
	n := p
	for _, s := range path {
		if n.whole {
			return
		}
		if s.each {
			if n.each == nil {
				n.each = &projection{}
			}
			n = n.each
			continue
		}
		if n.children == nil {
			n.children = map[string]*projection{}
		}
		c := n.children[s.key]
		if c == nil {
			c = &projection{}
			n.children[s.key] = c
		}
		n = c
	}
	if whole {
		*n = projection{whole: true}
	}
}

// leaf reports whether p reads the value at its place whole: a read of the
// whole value, or of its presence with nothing read inside it.
func (p *projection) leaf() bool { return p.whole || (p.children == nil && p.each == nil) }

// merged is a projection reading what a and b both read.
func merged(a, b *projection) *projection {
	if a.whole || b.whole {
		return &projection{whole: true}
	}
	out := &projection{children: map[string]*projection{}}
	for k, c := range a.children {
		out.children[k] = c
	}
	for k, c := range b.children {
		if prev, dup := out.children[k]; dup {
			c = merged(prev, c)
		}
		out.children[k] = c
	}
	switch {
	case a.each != nil && b.each != nil:
		out.each = merged(a.each, b.each)
	case a.each != nil:
		out.each = a.each
	default:
		out.each = b.each
	}
	return out
}

// convert converts the parts of decoded JSON that p reads. A value read
// whole, a value with nothing read inside it, and a value that is not the
// collection p steps into are converted whole: those are exact. top marks
// the document itself, whose members come from convertMember so that
// shared ones are reused.
func (p *projection) convert(v any, top bool) (ast.Value, error) {
	if p.leaf() {
		return ast.InterfaceToValue(v)
	}
	switch c := v.(type) {
	case map[string]any:
		var items [][2]*ast.Term
		add := func(k string, e any, n *projection) error {
			var conv ast.Value
			var err error
			if top && n.leaf() {
				conv, err = convertMember(e)
			} else {
				conv, err = n.convert(e, false)
			}
			if err != nil {
				return err
			}
			items = append(items, ast.Item(ast.StringTerm(k), ast.NewTerm(conv)))
			return nil
		}
		if p.each != nil {
			for k, e := range c {
				n := p.each
				if named := p.children[k]; named != nil {
					n = merged(named, p.each)
				}
				if err := add(k, e, n); err != nil {
					return nil, err
				}
			}
		} else {
			for k, n := range p.children {
				if e, found := c[k]; found {
					if err := add(k, e, n); err != nil {
						return nil, err
					}
				}
			}
		}
		return ast.NewObject(items...), nil
	case []any:
		if p.each == nil {
			return ast.InterfaceToValue(v)
		}
		terms := make([]*ast.Term, len(c))
		for i, e := range c {
			conv, err := p.each.convert(e, false)
			if err != nil {
				return nil, err
			}
			terms[i] = ast.NewTerm(conv)
		}
		return ast.NewArray(terms...), nil
	}
	return ast.InterfaceToValue(v)
}
