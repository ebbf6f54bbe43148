package runtime

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/gpuhost/gpuhost/facts/collect"
)

// headerKey holds, inside a table of a line tree, where the table's header
// is. No TOML key can be it: keys hold no NUL.
const headerKey = "\x00header"

// walk follows a dotted key from t, making the tables on the way, and
// returns the last one and the key's first part (where it is written).
func walk(t map[string]any, key unstable.Iterator, depth int) (map[string]any, *unstable.Node, error) {
	var first *unstable.Node
	for n := 0; key.Next(); n++ {
		part := key.Node()
		if first == nil {
			first = part
		}
		if n > depth {
			return nil, nil, fmt.Errorf("tables nested deeper than %d", maxTOMLDepth)
		}
		name := string(part.Data)
		next, ok := t[name].(map[string]any)
		if !ok {
			next = map[string]any{}
			t[name] = next
		}
		t = next
	}
	return t, first, nil
}

// setLines records a key/value in table t: its place for a plain value, or
// for an inline table the table's place and each of its own keys.
func setLines(t map[string]any, kv *unstable.Node, at func(*unstable.Node) collect.FileLine, depth int) error {
	if depth > maxTOMLDepth {
		return fmt.Errorf("tables nested deeper than %d", maxTOMLDepth)
	}
	// All but the last part of a dotted key are tables.
	var parts []*unstable.Node
	for it := kv.Key(); it.Next(); {
		parts = append(parts, it.Node())
	}
	if len(parts) == 0 {
		return nil
	}
	for _, part := range parts[:len(parts)-1] {
		next, ok := t[string(part.Data)].(map[string]any)
		if !ok {
			next = map[string]any{}
			t[string(part.Data)] = next
		}
		t = next
	}
	last := parts[len(parts)-1]
	v := kv.Value()
	if v.Kind != unstable.InlineTable {
		t[string(last.Data)] = at(parts[0])
		return nil
	}
	inner := map[string]any{headerKey: at(parts[0])}
	t[string(last.Data)] = inner
	for it := v.Children(); it.Next(); {
		if c := it.Node(); c.Kind == unstable.KeyValue {
			if err := setLines(inner, c, at, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// lineOf is where the setting at keys is set in a merged line tree: the
// key's own place, or for a table its header, or, for a table made only by
// the tables and keys under it, the first of those.
func lineOf(tree map[string]any, keys ...string) (collect.FileLine, bool) {
	var cur any = tree
	for _, k := range keys {
		t, ok := cur.(map[string]any)
		if !ok {
			return collect.FileLine{}, false
		}
		if cur, ok = t[k]; !ok {
			return collect.FileLine{}, false
		}
	}
	return firstLine(cur, 0)
}

func firstLine(v any, depth int) (collect.FileLine, bool) {
	switch v := v.(type) {
	case collect.FileLine:
		return v, true
	case map[string]any:
		if h, ok := v[headerKey].(collect.FileLine); ok {
			return h, true
		}
		if depth > maxTOMLDepth {
			return collect.FileLine{}, false
		}
		var found []collect.FileLine
		for _, c := range v {
			if l, ok := firstLine(c, depth+1); ok {
				found = append(found, l)
			}
		}
		if len(found) == 0 {
			return collect.FileLine{}, false
		}
		return slices.MinFunc(found, func(a, b collect.FileLine) int {
			if c := strings.Compare(a.File, b.File); c != 0 {
				return c
			}
			return a.Line - b.Line
		}), true
	}
	return collect.FileLine{}, false
}
