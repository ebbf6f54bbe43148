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
