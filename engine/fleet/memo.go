// Package fleet is the policy engine's speed-up for fleet scans, a wrapper
// around the plain *engine.Engine the way a cache wraps an image: Memo
// answers what it has seen and hands the rest to the engine it wraps, and
// its results are held equal to the plain path's by tests.
package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/rego"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/reports"
)

// A check's deny, skip and error sets are a pure function of the parts of the input
// its rules read: the params and the compiled pack are fixed for an engine's
// life. Hosts of one fleet share most of those parts (the same sshd, TLS and
// runtime configuration baked into one image), so the engine remembers each
// check's outcome keyed by a digest of exactly what the check reads, and
// evaluates only the checks whose inputs it has not seen.

// DefaultEntries is the memo size a fleet scan asks for.
const DefaultEntries = 1 << 16

// Bounds on the work spent digesting untrusted input: past them a check is
// simply evaluated, never memoized.
const (
	maxDigestDepth = 512
	maxDigestBytes = 64 << 20
)

// Memo is an engine that remembers check outcomes: the checks whose reads a
// document shares with one seen before are answered from the memo, and only
// the rest are evaluated by the engine it wraps, on the parts of input they
// read, with a virtual cache built for many small evaluations. It is safe
// for concurrent use.
type Memo struct {
	*engine.Engine
	// reads is, per check, what it reads from input; readItems every item
	// some check reads.
	reads     []*readSet
	readItems []readItem
	// shared keeps item digests of members hosts share.
	shared *sharedDigests
	memo   *memo
	// projections caches, per prepared query, the parts of input its
	// checks read (see projectionOf).
	projections  sync.Map
	nProjections atomic.Int64
}

// New wraps e with a memo of up to entries outcomes (DefaultEntries when
// entries is 0 or less).
func New(e *engine.Engine, entries int) *Memo {
	if entries <= 0 {
		entries = DefaultEntries
	}
	checks := e.Checks()
	m := &Memo{Engine: e, shared: &sharedDigests{m: map[sharedItem]sharedSum{}}}
	m.reads, m.readItems = analyzeReads(e.Compiler(), checks)
	m.memo = &memo{limit: entries, checks: make([]memoStats, len(checks))}
	return m
}

// readSet is what one check reads from input (see reads.go), or nil when
// the check cannot be memoized (it reads the whole input, reads it through a
// path the analysis cannot follow, or calls a nondeterministic builtin).
//
// A check whose messages print values it otherwise only tests for presence
// has two keys. The pass key digests those values' presence alone: hosts
// that differ only there (a GPU's UUID in "GPU 3 (GPU-...) runs with ECC
// off") share it, and it recalls only passes, whose empty sets print
// nothing. The full key digests the values too, and recalls any outcome.
type readSet struct {
	items []readItem
	// ids index the engine's list of every item some check reads: the
	// full key's items.
	ids []int
	// passIDs are the pass key's items; nil when the keys are one.
	passIDs []int
	// full are the full key's items: everything the check sees of input.
	// Evaluating it against input cut down to them gives the same outcome,
	// so a host converts only what its unanswered checks read.
	full []readItem
}

// memoKey names one check's outcome for one digest of its inputs.
type memoKey struct {
	check int
	pass  bool
	sum   [sha256.Size]byte
}

type memoEntry = engine.Outcome

// memo is a bounded, concurrent map of outcomes. When it fills it starts
// over: stale entries are never wrong, only the hit rate suffers.
type memo struct {
	limit int
	size  atomic.Int64
	m     sync.Map
	// checks counts, per check, how its lookups went.
	checks []memoStats
}

// memoStats counts one check's lookups and hits. A check whose input
// differs on every host (a GPU check reads each GPU's UUID and temperature)
// never hits, and working out its key is then pure cost: digesting eight
// GPUs for each of a dozen checks was a tenth of a live-host fleet scan.
type memoStats struct {
	lookups, hits atomic.Int64
}

// memoProbe is how many lookups a check gets before the memo judges it, and
// memoMinHitRate the share of hits (one in memoMinHitRate) it must reach
// to keep being looked up.
const (
	memoProbe      = 256
	memoMinHitRate = 16
)

// worthLooking reports whether check i's lookups have hit often enough to
// keep looking it up.
func (m *memo) worthLooking(i int) bool {
	s := &m.checks[i]
	n := s.lookups.Load()
	return n < memoProbe || s.hits.Load()*memoMinHitRate >= n
}

func (m *memo) count(i int, hit bool) {
	m.checks[i].lookups.Add(1)
	if hit {
		m.checks[i].hits.Add(1)
	}
}

func (m *memo) load(k memoKey) (*memoEntry, bool) {
	v, ok := m.m.Load(k)
	if !ok {
		return nil, false
	}
	return v.(*memoEntry), true
}

func (m *memo) store(k memoKey, e *memoEntry) {
	if m.size.Add(1) > int64(m.limit) {
		m.m.Clear()
		m.size.Store(1)
	}
	m.m.Store(k, e)
}

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

// recall decides every check in run whose outcome the memo holds, and
// returns the checks left to evaluate with the keys to remember them by.
func (m *Memo) recall(doc *engine.Document, run []int, out []reports.Result) ([]int, map[int]memoKeys) {
	d := newItemDigests(doc, m.readItems, m.shared)
	keys := make(map[int]memoKeys, len(run))
	left := run[:0:0]
	for _, i := range run {
		rs := m.reads[i]
		if rs == nil || !m.memo.worthLooking(i) {
			left = append(left, i)
			continue
		}
		var k memoKeys
		var hit *memoEntry
		if rs.passIDs != nil {
			if k.pass, k.hasPass = d.key(i, rs.passIDs, true); k.hasPass {
				hit, _ = m.memo.load(k.pass)
			}
		}
		if hit == nil {
			if k.full, k.hasFull = d.key(i, rs.ids, false); k.hasFull {
				hit, _ = m.memo.load(k.full)
			}
		}
		if !k.hasPass && !k.hasFull {
			left = append(left, i)
			continue
		}
		m.memo.count(i, hit != nil)
		if hit != nil {
			m.Decide(&out[i], cloneOutcome(*hit))
			continue
		}
		keys[i] = k
		left = append(left, i)
	}
	return left, keys
}

// cloneOutcome copies o's sets, so that a result never shares a slice with
// the memo.
func cloneOutcome(o engine.Outcome) engine.Outcome {
	return engine.Outcome{Deny: slices.Clone(o.Deny), Skip: slices.Clone(o.Skip), Errs: slices.Clone(o.Errs), Found: slices.Clone(o.Found)}
}

// memoKeys are the keys one check's outcome on one document is stored by.
type memoKeys struct {
	pass, full       memoKey
	hasPass, hasFull bool
}

// remember stores check i's outcome under the key recall gave it: a pass
// under the pass key when the check has one, anything else under the full
// key, which a document too large to digest fully may lack.
func (m *Memo) remember(keys map[int]memoKeys, i int, o engine.Outcome) {
	k, ok := keys[i]
	if !ok {
		return
	}
	entry := cloneOutcome(o)
	switch {
	case k.hasPass && len(o.Deny) == 0 && len(o.Skip) == 0 && len(o.Errs) == 0:
		m.memo.store(k.pass, &entry)
	case k.hasFull:
		m.memo.store(k.full, &entry)
	}
}

// Evaluate is the engine's Evaluate, answering from the memo what it can.
func (m *Memo) Evaluate(ctx context.Context, doc *engine.Document) ([]reports.Result, error) {
	out, gated := m.Applicable(doc)
	run, keys := m.recall(doc, gated, out)
	if len(run) == 0 {
		return out, nil
	}
	if len(run) < len(gated) && !m.HasQuery(run) && m.QueriesFull() {
		// Too many distinct sets of misses: evaluate the whole gated set,
		// whose query is kept, rather than prepare one per host.
		run = gated
	}
	q, err := m.Query(run)
	if err != nil {
		return nil, err
	}
	input, err := m.inputFor(doc, q, run)
	if err != nil {
		return nil, err
	}
	return out, m.EvaluateQuery(ctx, q, input, out, run, func(i int, o engine.Outcome) { m.remember(keys, i, o) }, withRefCache)
}

// withRefCache gives each evaluation a refCache of its own from the pool.
func withRefCache() ([]rego.EvalOption, func()) {
	cache := getRefCache()
	return []rego.EvalOption{rego.EvalVirtualCache(cache)}, func() { putRefCache(cache) }
}

// inputFor returns the document as OPA's input, or, when the document came
// decoded and the checks in run are analysed, only the parts of it they
// read: most hosts of a fleet are answered from the memo but for a check or
// two, and converting the whole document for them cost more than
// evaluating them. The cut-down value is not kept: another host's checks
// read other parts.
func (m *Memo) inputFor(doc *engine.Document, q *engine.Query, run []int) (ast.Value, error) {
	p := m.projectionOf(q, run)
	if doc.Value != nil || p == nil || doc.Decoded() == nil {
		return doc.InputWith(convertDecoded)
	}
	v, err := p.convert(doc.Decoded(), true)
	if err != nil {
		return nil, fmt.Errorf("converting facts %s: %w", doc.Name(), err)
	}
	return v, nil
}

// noProjection marks a set of checks one of which must see all of input.
var noProjection = &projection{whole: true}

// maxProjections bounds the projections kept, one per set of checks
// evaluated together, as the engine bounds its prepared queries.
const maxProjections = 256

// projectionOf returns the parts of input the checks in run, evaluated by
// q, read, or nil when one of them is not analysed and must see all of it.
// It is kept by q, which the engine keeps for each set of checks while it
// keeps queries at all.
func (m *Memo) projectionOf(q *engine.Query, run []int) *projection {
	key := q
	if p, ok := m.projections.Load(key); ok {
		if p == noProjection {
			return nil
		}
		return p.(*projection)
	}
	p := &projection{}
	for _, i := range run {
		rs := m.reads[i]
		if rs == nil {
			p = noProjection
			break
		}
		for _, it := range rs.full {
			p.add(it.path, it.mode != readPresence)
		}
	}
	if p.whole || p.each != nil {
		p = noProjection // a check iterates over input's own members
	}
	if m.nProjections.Load() < maxProjections {
		if _, loaded := m.projections.LoadOrStore(key, p); !loaded {
			m.nProjections.Add(1)
		}
	}
	if p == noProjection {
		return nil
	}
	return p
}
