package engine

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuhost/gpuhost/checks/facts"
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

// maxCanonicalBytes bounds the canonical text kept for shared values.
const maxCanonicalBytes = 4 << 20

// sharedCanonical keeps the canonical text (appendCanonicalAny) of shared
// top-level members, keyed as sharedMembers is: a check that reads one
// image's whole package inventory would otherwise write the same sorted
// text for every host.
var sharedCanonical = struct {
	sync.Mutex
	byKey map[any]canonicalText
	size  int
}{byKey: map[any]canonicalText{}}

type canonicalText struct {
	decoded any
	// start is where the text began in its buffer: appendCanonicalAny
	// gives up past maxDigestBytes of buffer, so the same value written
	// after a longer prefix could fail where this did not.
	start int
	text  []byte
	ok    bool
}

// appendCanonicalShared is appendCanonicalAny(b, v, 0), with the text of a
// value met before taken from sharedCanonical.
func appendCanonicalShared(b []byte, v any) ([]byte, bool) {
	key, ok := facts.SharedKey(v)
	if !ok {
		return appendCanonicalAny(b, v, 0)
	}
	sharedCanonical.Lock()
	e, hit := sharedCanonical.byKey[key]
	sharedCanonical.Unlock()
	if hit && e.start == len(b) {
		if !e.ok {
			return b, false
		}
		return append(b, e.text...), true
	}
	start := len(b)
	b, ok = appendCanonicalAny(b, v, 0)
	if len(b)-start > maxCanonicalBytes {
		return b, ok
	}
	text := append([]byte(nil), b[start:]...)
	sharedCanonical.Lock()
	defer sharedCanonical.Unlock()
	if sharedCanonical.size+len(text) > maxCanonicalBytes {
		clear(sharedCanonical.byKey)
		sharedCanonical.size = 0
	}
	sharedCanonical.byKey[key] = canonicalText{decoded: v, start: start, text: text, ok: ok}
	sharedCanonical.size += len(text)
	return b, ok
}
