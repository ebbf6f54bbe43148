package engine

import (
	"reflect"
	"sync"
	"unsafe"

	"github.com/open-policy-agent/opa/v1/ast"
)

// maxShared bounds the converted members kept for reuse, and maxSeenAddrs
// the addresses met once.
const (
	maxShared    = 256
	maxSeenAddrs = 4096
)

// sharedMembers remembers OPA values converted from top-level members of
// decoded documents. facts.DecodeJSON hands every host that carries a
// member with the same bytes (one image's package inventory, say) the very
// same decoded map or slice; its conversion is made once and shared, as
// OPA values are read-only during evaluation. Entries are keyed by the
// decoded value's address and hold the value itself, so the address cannot
// be reused by another value while its entry exists. A member is kept from
// its second sighting on, so that the members each host has to itself (its
// GPUs, its sockets) do not crowd out the shared ones; seen holds bare
// addresses, so a reused one only admits a member early.
var sharedMembers = struct {
	sync.Mutex
	byAddr map[memberAddr]sharedMember
	seen   map[memberAddr]struct{}
}{byAddr: map[memberAddr]sharedMember{}, seen: map[memberAddr]struct{}{}}

type memberAddr struct {
	p unsafe.Pointer
	n int
}

type sharedMember struct {
	decoded any
	value   ast.Value
}

// addrOf identifies a decoded map or non-empty slice; other values (and
// empty slices, which share no storage) have no identity worth keeping.
func addrOf(v any) (memberAddr, bool) {
	switch x := v.(type) {
	case map[string]any:
		return memberAddr{p: reflect.ValueOf(x).UnsafePointer(), n: -1}, x != nil
	case []any:
		return memberAddr{p: unsafe.Pointer(unsafe.SliceData(x)), n: len(x)}, len(x) > 0
	}
	return memberAddr{}, false
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
	addr, ok := addrOf(member)
	if !ok {
		return ast.InterfaceToValue(member)
	}
	sharedMembers.Lock()
	e, hit := sharedMembers.byAddr[addr]
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
	if _, ok := sharedMembers.seen[addr]; !ok {
		if len(sharedMembers.seen) >= maxSeenAddrs {
			clear(sharedMembers.seen)
		}
		sharedMembers.seen[addr] = struct{}{}
		return v, nil
	}
	if len(sharedMembers.byAddr) >= maxShared {
		clear(sharedMembers.byAddr)
	}
	sharedMembers.byAddr[addr] = sharedMember{decoded: member, value: v}
	return v, nil
}

// maxCanonicalBytes bounds the canonical text kept for shared values.
const maxCanonicalBytes = 4 << 20

// sharedCanonical keeps the canonical text (appendCanonicalAny) of decoded
// maps and slices met more than once, by address as sharedMembers does: a
// check that reads one image's whole package inventory would otherwise
// write the same sorted text for every host.
var sharedCanonical = struct {
	sync.Mutex
	byAddr map[memberAddr]canonicalText
	seen   map[memberAddr]struct{}
	size   int
}{byAddr: map[memberAddr]canonicalText{}, seen: map[memberAddr]struct{}{}}

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
	addr, ok := addrOf(v)
	if !ok {
		return appendCanonicalAny(b, v, 0)
	}
	sharedCanonical.Lock()
	e, hit := sharedCanonical.byAddr[addr]
	_, seen := sharedCanonical.seen[addr]
	if !hit && !seen {
		if len(sharedCanonical.seen) >= maxSeenAddrs {
			clear(sharedCanonical.seen)
		}
		sharedCanonical.seen[addr] = struct{}{}
	}
	sharedCanonical.Unlock()
	if hit && e.start == len(b) {
		if !e.ok {
			return b, false
		}
		return append(b, e.text...), true
	}
	start := len(b)
	b, ok = appendCanonicalAny(b, v, 0)
	if !seen {
		return b, ok
	}
	text := append([]byte(nil), b[start:]...)
	sharedCanonical.Lock()
	defer sharedCanonical.Unlock()
	if len(text) > maxCanonicalBytes {
		return b, ok
	}
	if sharedCanonical.size+len(text) > maxCanonicalBytes {
		clear(sharedCanonical.byAddr)
		sharedCanonical.size = 0
	}
	sharedCanonical.byAddr[addr] = canonicalText{decoded: v, start: start, text: text, ok: ok}
	sharedCanonical.size += len(text)
	return b, ok
}
