package fleet

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"slices"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
)

// Bounds on the work spent digesting untrusted input: past them a check is
// simply evaluated, never memoized.
const (
	maxDigestDepth = 512
	maxDigestBytes = 64 << 20
)

// itemDigests digests the parts of one document the checks read, each item
// once however many checks read it. The document is an AST value, or the
// decoded JSON it was made from; both are written alike (see appendItem and
// appendItemAny), so either finds the other's outcomes.
type itemDigests struct {
	root    ast.Value
	decoded any
	items   []readItem
	shared  *sharedDigests
	buf     []byte
	cat     []byte // the item digests a key of several items hashes
	sums    [][sha256.Size]byte
	state   []uint8 // 0: not yet, 1: done, 2: too large or deep
	// members caches facts.SharedKey per top-level member: many items
	// read each member, and the lookup takes the decoder memo's lock.
	members []memberShare
}

// memberShare is what facts.SharedKey said of one top-level member.
type memberShare struct {
	name   string
	key    any
	shared bool
}

// sharedKey is facts.SharedKey of the top-level member name, asked once
// per document.
func (d *itemDigests) sharedKey(name string, member any) (any, bool) {
	for _, m := range d.members {
		if m.name == name {
			return m.key, m.shared
		}
	}
	key, shared := facts.SharedKey(member)
	d.members = append(d.members, memberShare{name: name, key: key, shared: shared})
	return key, shared
}

// sharedDigests keeps the digests of items inside the top-level members
// facts.DecodeJSON shares between hosts (one image's sshd configuration,
// say): an item there digests alike on every host of the image, so it is
// worked out once. Entries hold the member, which keeps its
// facts.SharedKey naming it.
type sharedDigests struct {
	mu sync.Mutex
	m  map[sharedItem]sharedSum
}

type sharedItem struct {
	item   int
	member any
}

type sharedSum struct {
	member any
	sum    [sha256.Size]byte
	ok     bool
}

// maxSharedDigests bounds sharedDigests; when full it starts over.
const maxSharedDigests = 1 << 14

func (s *sharedDigests) load(k sharedItem) (sharedSum, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, hit := s.m[k]
	return e, hit
}

func (s *sharedDigests) store(k sharedItem, e sharedSum) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= maxSharedDigests {
		clear(s.m)
	}
	s.m[k] = e
}

func newItemDigests(doc *engine.Document, items []readItem, shared *sharedDigests) *itemDigests {
	d := &itemDigests{root: doc.Value, decoded: doc.Decoded(), items: items, shared: shared}
	d.sums = make([][sha256.Size]byte, len(items))
	d.state = make([]uint8, len(items))
	return d
}

// key returns the memo key of check i over the items ids, or false when the
// input is too large or too deep to digest.
func (d *itemDigests) key(i int, ids []int, pass bool) (memoKey, bool) {
	k := memoKey{check: i, pass: pass}
	if len(ids) == 1 {
		if !d.digest(ids[0]) {
			return memoKey{}, false
		}
		k.sum = d.sums[ids[0]]
		return k, true
	}
	d.cat = d.cat[:0]
	for _, id := range ids {
		if !d.digest(id) {
			return memoKey{}, false
		}
		d.cat = append(d.cat, d.sums[id][:]...)
	}
	k.sum = sha256.Sum256(d.cat)
	return k, true
}

func (d *itemDigests) digest(id int) bool {
	switch d.state[id] {
	case 1:
		return true
	case 2:
		return false
	}
	it := d.items[id]
	var sk sharedItem
	if d.root == nil && d.shared != nil && len(it.path) > 0 && !it.path[0].each {
		if obj, isObj := d.decoded.(map[string]any); isObj {
			member := obj[it.path[0].key]
			if key, shared := d.sharedKey(it.path[0].key, member); shared {
				sk = sharedItem{item: id, member: key}
				if e, hit := d.shared.load(sk); hit {
					return d.settle(id, e.sum, e.ok)
				}
				defer func() {
					d.shared.store(sk, sharedSum{member: member, sum: d.sums[id], ok: d.state[id] == 1})
				}()
			}
		}
	}
	d.buf = d.buf[:0]
	// The item itself goes in, so that the same value read at two places,
	// or read two ways, digests differently.
	d.buf = append(d.buf, byte(it.mode))
	for _, s := range it.path {
		if s.each {
			d.buf = append(d.buf, '*')
			continue
		}
		d.buf = appendText(d.buf, '.', s.key)
	}
	ok := true
	if d.root != nil {
		d.buf, ok = appendItem(d.buf, d.root, it.path, it.mode, 0)
	} else {
		d.buf, ok = appendItemAny(d.buf, d.decoded, it.path, it.mode, 0)
	}
	return d.settle(id, sha256.Sum256(d.buf), ok)
}

func (d *itemDigests) settle(id int, sum [sha256.Size]byte, ok bool) bool {
	if !ok {
		d.state[id] = 2
		return false
	}
	d.sums[id] = sum
	d.state[id] = 1
	return true
}

// appendItem writes what a read of path, in mode, sees of v. A path that
// does not resolve writes 'u' for a missing key, or the type of the value
// it could not step into; a step into each member writes the collection's
// size and then each member's part in order (an object's keys with them).
func appendItem(b []byte, v ast.Value, path []step, mode readMode, depth int) ([]byte, bool) {
	if depth > maxDigestDepth || len(b) > maxDigestBytes {
		return b, false
	}
	if len(path) == 0 {
		switch mode {
		case readPresence:
			return append(b, 'p'), true
		case readLength:
			switch c := v.(type) {
			case *ast.Array:
				return appendLen(append(b, 'a'), c.Len()), true
			case ast.Object:
				return appendLen(append(b, 'o'), c.Len()), true
			case ast.Set:
				return appendLen(append(b, 'e'), c.Len()), true
			case ast.String:
				return appendText(b, 's', string(c)), true
			}
			return append(b, 'T', typeTag(v)), true
		}
		return appendCanonical(b, v, 0)
	}
	s := path[0]
	if !s.each {
		obj, isObj := v.(ast.Object)
		if !isObj {
			return append(b, 'T', typeTag(v)), true
		}
		t := obj.Get(ast.InternedTerm(s.key))
		if t == nil {
			return append(b, 'u'), true
		}
		return appendItem(b, t.Value, path[1:], mode, depth+1)
	}
	ok := true
	switch c := v.(type) {
	case *ast.Array:
		b = appendLen(append(b, 'a'), c.Len())
		for i := 0; i < c.Len() && ok; i++ {
			b, ok = appendItem(b, c.Elem(i).Value, path[1:], mode, depth+1)
		}
	case ast.Object:
		b = appendLen(append(b, 'o'), c.Len())
		c.Foreach(func(k, e *ast.Term) {
			if ok {
				b, ok = appendCanonical(b, k.Value, depth+1)
			}
			if ok {
				b, ok = appendItem(b, e.Value, path[1:], mode, depth+1)
			}
		})
	default:
		// Not a collection (a set never comes from JSON): the whole value.
		b, ok = appendCanonical(append(b, 'x'), v, depth)
	}
	return b, ok
}

// appendItemAny is appendItem for decoded JSON.
func appendItemAny(b []byte, v any, path []step, mode readMode, depth int) ([]byte, bool) {
	if depth > maxDigestDepth || len(b) > maxDigestBytes {
		return b, false
	}
	tag, known := typeTagAny(v)
	if !known {
		return b, false
	}
	if len(path) == 0 {
		switch mode {
		case readPresence:
			return append(b, 'p'), true
		case readLength:
			switch c := v.(type) {
			case []any:
				return appendLen(append(b, 'a'), len(c)), true
			case map[string]any:
				return appendLen(append(b, 'o'), len(c)), true
			case string:
				return appendText(b, 's', c), true
			}
			return append(b, 'T', tag), true
		}
		return appendCanonicalAny(b, v, 0)
	}
	s := path[0]
	if !s.each {
		obj, isObj := v.(map[string]any)
		if !isObj {
			return append(b, 'T', tag), true
		}
		e, found := obj[s.key]
		if !found {
			return append(b, 'u'), true
		}
		return appendItemAny(b, e, path[1:], mode, depth+1)
	}
	ok := true
	switch c := v.(type) {
	case []any:
		b = appendLen(append(b, 'a'), len(c))
		for i := 0; i < len(c) && ok; i++ {
			b, ok = appendItemAny(b, c[i], path[1:], mode, depth+1)
		}
	case map[string]any:
		b = appendLen(append(b, 'o'), len(c))
		keys := make([]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = appendText(b, 's', k)
			if b, ok = appendItemAny(b, c[k], path[1:], mode, depth+1); !ok {
				break
			}
		}
	default:
		b, ok = appendCanonicalAny(append(b, 'x'), v, depth)
	}
	return b, ok
}

// typeTag names a value's type in a digest.
func typeTag(v ast.Value) byte {
	switch v.(type) {
	case ast.Null:
		return 'n'
	case ast.Boolean:
		return 'b'
	case ast.Number:
		return 'd'
	case ast.String:
		return 's'
	case *ast.Array:
		return 'a'
	case ast.Object:
		return 'o'
	case ast.Set:
		return 'e'
	}
	return 'x'
}

// typeTagAny is typeTag for decoded JSON; it reports false for a value that
// decoded JSON never holds.
func typeTagAny(v any) (byte, bool) {
	switch v.(type) {
	case nil:
		return 'n', true
	case bool:
		return 'b', true
	case json.Number:
		return 'd', true
	case string:
		return 's', true
	case []any:
		return 'a', true
	case map[string]any:
		return 'o', true
	}
	return 0, false
}

func appendLen(b []byte, n int) []byte { return binary.AppendUvarint(b, uint64(n)) }

// appendText writes a tagged, length-prefixed string: numbers and strings.
func appendText(b []byte, tag byte, s string) []byte {
	b = append(b, tag)
	b = appendLen(b, len(s))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 't')
	}
	return append(b, 'f')
}

// appendCanonical writes v in a form where two values are written alike only
// if they are equal: a type tag, then lengths before contents, and object
// keys and set members in OPA's sorted order.
func appendCanonical(b []byte, v ast.Value, depth int) ([]byte, bool) {
	if depth > maxDigestDepth || len(b) > maxDigestBytes {
		return b, false
	}
	ok := true
	switch v := v.(type) {
	case ast.Null:
		b = append(b, 'n')
	case ast.Boolean:
		b = appendBool(b, bool(v))
	case ast.Number:
		// Numbers compare by value in Rego but are written as text: two
		// spellings of one number only cost a miss.
		b = appendText(b, 'd', string(v))
	case ast.String:
		b = appendText(b, 's', string(v))
	case *ast.Array:
		b = append(b, 'a')
		b = appendLen(b, v.Len())
		for i := 0; i < v.Len() && ok; i++ {
			b, ok = appendCanonical(b, v.Elem(i).Value, depth+1)
		}
	case ast.Object:
		b = append(b, 'o')
		b = appendLen(b, v.Len())
		v.Foreach(func(k, e *ast.Term) {
			if ok {
				b, ok = appendCanonical(b, k.Value, depth+1)
			}
			if ok {
				b, ok = appendCanonical(b, e.Value, depth+1)
			}
		})
	case ast.Set:
		b = append(b, 'e')
		b = appendLen(b, v.Len())
		sorted := v.Sorted()
		for i := 0; i < sorted.Len() && ok; i++ {
			b, ok = appendCanonical(b, sorted.Elem(i).Value, depth+1)
		}
	default:
		// Refs, vars and comprehensions never come from JSON; their
		// string form is exact enough for a value that should not be here.
		s := v.String()
		b = append(b, 'x')
		b = appendLen(b, len(s))
		b = append(b, s...)
	}
	return b, ok
}

// appendCanonicalAny writes decoded JSON (objects as map[string]any, numbers
// as json.Number) exactly as appendCanonical writes the AST value
// InterfaceToValue makes of it. Anything else cannot be digested.
func appendCanonicalAny(b []byte, v any, depth int) ([]byte, bool) {
	if depth > maxDigestDepth || len(b) > maxDigestBytes {
		return b, false
	}
	ok := true
	switch v := v.(type) {
	case nil:
		b = append(b, 'n')
	case bool:
		b = appendBool(b, v)
	case json.Number:
		b = appendText(b, 'd', string(v))
	case string:
		b = appendText(b, 's', v)
	case []any:
		b = append(b, 'a')
		b = appendLen(b, len(v))
		for i := 0; i < len(v) && ok; i++ {
			b, ok = appendCanonicalAny(b, v[i], depth+1)
		}
	case map[string]any:
		b = append(b, 'o')
		b = appendLen(b, len(v))
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b = appendText(b, 's', k)
			if b, ok = appendCanonicalAny(b, v[k], depth+1); !ok {
				break
			}
		}
	default:
		return b, false
	}
	return b, ok
}
