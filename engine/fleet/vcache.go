package fleet

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// refCache is the virtual-document cache one evaluation uses: the value (or
// undefined) of every rule already evaluated, by its ref.
//
// OPA's own cache is a tree with a hash map at every step of every ref,
// built afresh per evaluation. A host's evaluation puts a few entries per
// check, and for the GPU pack building those maps was about a tenth of the
// evaluation. This one is a single hash index over a slice, and the whole
// thing is reused from a pool, so a warm evaluation allocates nothing for
// it.
type refCache struct {
	frames []cacheFrame
	depth  int // frames[:depth] are in use; the top is frames[depth-1]
}

// cacheFrame holds the entries of one Push. OPA pushes a frame where a
// "with" replaces part of input or data, so values cached outside it are
// not seen inside.
type cacheFrame struct {
	index   map[int]int32 // ref hash to 1 + index of the newest entry with it
	entries []cacheEntry
	terms   []*ast.Term // the entries' refs, copied end to end
}

type cacheEntry struct {
	ref       ast.Ref
	value     *ast.Term
	undefined bool
	next      int32 // 1 + index of the previous entry with the same hash, or 0
}

var _ topdown.VirtualCache = (*refCache)(nil)

var refCaches = sync.Pool{New: func() any { return &refCache{} }}

// getRefCache returns an empty cache with one frame; release it with
// putRefCache once nothing from the evaluation refers to its values.
func getRefCache() *refCache {
	c := refCaches.Get().(*refCache)
	c.Push()
	return c
}

func putRefCache(c *refCache) {
	for c.depth > 0 {
		c.Pop()
	}
	refCaches.Put(c)
}

// Push starts an empty frame: until the matching Pop, Get sees only what
// was put since, as with OPA's own cache.
func (c *refCache) Push() {
	if c.depth == len(c.frames) {
		c.frames = append(c.frames, cacheFrame{index: map[int]int32{}})
	}
	c.depth++
}

// Pop drops the top frame's entries, keeping their storage for reuse.
func (c *refCache) Pop() {
	c.depth--
	f := &c.frames[c.depth]
	clear(f.index)
	clear(f.entries) // let the values go
	f.entries = f.entries[:0]
	clear(f.terms)
	f.terms = f.terms[:0]
}

// Get returns the value cached for ref in the top frame: (v, false) when
// it is defined, (nil, true) when it was found undefined, and (nil, false)
// when it is not cached.
func (c *refCache) Get(ref ast.Ref) (*ast.Term, bool) {
	f := &c.frames[c.depth-1]
	for i := f.index[ref.Hash()]; i != 0; i = f.entries[i-1].next {
		if e := &f.entries[i-1]; e.ref.Equal(ref) {
			return e.value, e.undefined
		}
	}
	return nil, false
}

// Put records value for ref in the top frame; a nil value records that
// ref is undefined.
func (c *refCache) Put(ref ast.Ref, value *ast.Term) {
	f := &c.frames[c.depth-1]
	h := ref.Hash()
	for i := f.index[h]; i != 0; i = f.entries[i-1].next {
		if e := &f.entries[i-1]; e.ref.Equal(ref) {
			e.value, e.undefined = value, value == nil
			return
		}
	}
	// The caller may reuse the slice behind ref, so its terms are copied,
	// into one shared slice rather than one allocation per entry. A copy
	// made before that slice grew keeps the old array alive.
	f.terms = append(f.terms, ref...)
	key := f.terms[len(f.terms)-len(ref) : len(f.terms) : len(f.terms)]
	f.entries = append(f.entries, cacheEntry{ref: key, value: value, undefined: value == nil, next: f.index[h]})
	f.index[h] = int32(len(f.entries))
}

// Keys returns the refs cached in the top frame.
func (c *refCache) Keys() []ast.Ref {
	f := &c.frames[c.depth-1]
	keys := make([]ast.Ref, len(f.entries))
	for i, e := range f.entries {
		keys[i] = e.ref
	}
	return keys
}
