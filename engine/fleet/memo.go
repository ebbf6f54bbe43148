// Package fleet is the policy engine's speed-up for fleet scans, a wrapper
// around the plain *engine.Engine the way a cache wraps an image: Memo
// answers what it has seen and hands the rest to the engine it wraps, and
// its results are held equal to the plain path's by tests.
package fleet

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/gpuhost/gpuhost/engine"
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
