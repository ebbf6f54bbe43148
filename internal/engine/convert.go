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

// convertUnder converts the parts of decoded under roots (sorted, none
// under another) and the objects on the way to them, and nothing else.
// Top-level members come from convertMember, so shared ones are reused.
func convertUnder(decoded any, roots [][]string) (ast.Value, error) {
	return convertUnderAt(decoded, roots, 0)
}

func convertUnderAt(v any, roots [][]string, depth int) (ast.Value, error) {
	obj, isObj := v.(map[string]any)
	if !isObj {
		// Nothing under a non-object resolves: the value whole is exact.
		return ast.InterfaceToValue(v)
	}
	var items [][2]*ast.Term
	for i := 0; i < len(roots); {
		key := roots[i][depth]
		j := i + 1
		for j < len(roots) && roots[j][depth] == key {
			j++
		}
		member, found := obj[key]
		if found {
			var conv ast.Value
			var err error
			switch {
			case len(roots[i]) == depth+1 && depth == 0:
				conv, err = convertMember(member)
			case len(roots[i]) == depth+1:
				conv, err = ast.InterfaceToValue(member)
			default:
				conv, err = convertUnderAt(member, roots[i:j], depth+1)
			}
			if err != nil {
				return nil, err
			}
			items = append(items, ast.Item(ast.StringTerm(key), ast.NewTerm(conv)))
		}
		i = j
	}
	return ast.NewObject(items...), nil
}
