package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuhost/gpuhost/reports"
)

// A check's deny and skip sets are a pure function of the parts of the input
// its rules read: the params and the compiled pack are fixed for an engine's
// life. Hosts of one fleet share most of those parts (the same sshd, TLS and
// runtime configuration baked into one image), so the engine remembers each
// check's outcome keyed by a digest of exactly what the check reads, and
// evaluates only the checks whose inputs it has not seen.

// DefaultMemoEntries bounds the memo New keeps when WithMemo is not given.
const DefaultMemoEntries = 1 << 16

// Bounds on the work spent digesting untrusted input: past them a check is
// simply evaluated, never memoized.
const (
	maxDigestDepth = 512
	maxDigestBytes = 64 << 20
)

// WithMemo sets how many check outcomes the engine remembers; 0 turns the
// memo off, so every check is evaluated against every document.
func WithMemo(entries int) Option {
	return func(o *options) { o.memo = max(entries, 0); o.memoSet = true }
}

// readSet is what one check reads from input: a list of paths, or nil when
// the check cannot be memoized (it reads the whole input, reads it through a
// path the analysis cannot follow, or calls a nondeterministic builtin).
type readSet struct {
	paths [][]string
	// ids index the engine's list of every path some check reads.
	ids []int
}

// memoKey names one check's outcome for one digest of its inputs.
type memoKey struct {
	check int
	sum   [sha256.Size]byte
}

type memoEntry struct {
	deny, skip []string
}

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

// analyzeReads finds, for every check, the input paths its rules and every
// rule they depend on read.
func analyzeReads(compiler *ast.Compiler, checks []Check) ([]*readSet, [][]string) {
	byPkg := map[string][]*ast.Rule{}
	for _, m := range compiler.Modules {
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
		byPkg[pkg] = append(byPkg[pkg], m.Rules...)
	}
	out := make([]*readSet, len(checks))
	var all [][]string
	index := map[string]int{}
	for i, c := range checks {
		rs := readsOf(compiler, byPkg[c.Package])
		if rs == nil {
			continue
		}
		for _, p := range rs.paths {
			name := strings.Join(p, "\x00")
			id, seen := index[name]
			if !seen {
				id = len(all)
				index[name] = id
				all = append(all, p)
			}
			rs.ids = append(rs.ids, id)
		}
		out[i] = rs
	}
	return out, all
}

func readsOf(compiler *ast.Compiler, roots []*ast.Rule) *readSet {
	seen := map[*ast.Rule]bool{}
	queue := slices.Clone(roots)
	var paths [][]string
	ok := true
	for len(queue) > 0 && ok {
		r := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if seen[r] {
			continue
		}
		seen[r] = true
		for n := r.Else; n != nil; n = n.Else {
			queue = append(queue, n)
		}
		for dep := range compiler.Graph.Dependencies(r) {
			if d, isRule := dep.(*ast.Rule); isRule {
				queue = append(queue, d)
			}
		}
		ok = collectInputPaths(r, &paths)
	}
	paths = normalizePaths(paths)
	// A check that reads the whole document reads every host's own name:
	// its outcomes would fill the memo and never be asked for again.
	if !ok || len(paths) > 0 && len(paths[0]) == 0 {
		return nil
	}
	return &readSet{paths: paths}
}

// collectInputPaths appends the input paths rule r reads. It returns false
// when r reads input in a way whose extent cannot be told statically.
//
// The compiler has rewritten the rule: `object.get(input, "k", d)` arrives as
// `__local1__ = input; object.get(__local1__, "k", d, __local2__)`. Local
// names are unique, so a local bound to an input path is followed as an
// alias of that path.
func collectInputPaths(r *ast.Rule, paths *[][]string) bool {
	aliases := map[ast.Var][]string{}
	defs := map[*ast.Expr]bool{}
	ast.WalkExprs(r, func(x *ast.Expr) bool {
		if !x.IsEquality() || len(x.With) > 0 {
			return false
		}
		a, b := x.Operand(0), x.Operand(1)
		for range 2 {
			if v, isVar := a.Value.(ast.Var); isVar && !v.Equal(ast.InputRootDocument.Value) {
				if p, whole := inputPrefix(b, nil); whole {
					aliases[v] = p
					defs[x] = true
				}
			}
			a, b = b, a
		}
		return false
	})
	ok := true
	var vis *ast.GenericVisitor
	vis = ast.NewGenericVisitor(func(x any) bool {
		if !ok {
			return true
		}
		switch x := x.(type) {
		case *ast.Expr:
			if defs[x] {
				return true
			}
			for _, w := range x.With {
				if isInputRooted(w.Target) {
					ok = false
				}
			}
			if !x.IsCall() {
				return false
			}
			if b, found := ast.BuiltinMap[x.Operator().String()]; found && b.Nondeterministic {
				ok = false
				return true
			}
			args := x.Operands()
			if !x.Operator().Equal(ast.ObjectGet.Ref()) || len(args) < 2 {
				return false
			}
			base, whole := inputPrefix(args[0], aliases)
			key, static := staticKey(args[1])
			if !whole || !static {
				return false
			}
			*paths = append(*paths, append(base, key...))
			for _, t := range args[2:] {
				vis.Walk(t)
			}
			return true
		case ast.Call:
			if len(x) > 0 {
				if b, found := ast.BuiltinMap[x[0].String()]; found && b.Nondeterministic {
					ok = false
					return true
				}
			}
		case ast.Var:
			if x.Equal(ast.InputRootDocument.Value) {
				// A bare input, not inside a ref the case below takes apart.
				*paths = append(*paths, []string{})
			} else if p, alias := aliases[x]; alias {
				*paths = append(*paths, slices.Clone(p))
			}
		case ast.Ref:
			base, rooted := refBase(x, aliases)
			if !rooted {
				return false
			}
			p, rest := refPath(x)
			*paths = append(*paths, append(slices.Clone(base), p...))
			for _, t := range x[rest:] {
				vis.Walk(t)
			}
			return true
		}
		return false
	})
	vis.Walk(r)
	return ok
}

// refBase returns the input path a ref starts from: none for input itself,
// the alias's path for a local bound to an input path.
func refBase(ref ast.Ref, aliases map[ast.Var][]string) ([]string, bool) {
	if len(ref) == 0 {
		return nil, false
	}
	if ref[0].Value.Compare(ast.InputRootDocument.Value) == 0 {
		return nil, true
	}
	if v, isVar := ref[0].Value.(ast.Var); isVar {
		p, alias := aliases[v]
		return p, alias
	}
	return nil, false
}

func isInputRooted(t *ast.Term) bool {
	switch v := t.Value.(type) {
	case ast.Ref:
		return len(v) > 0 && v[0].Value.Compare(ast.InputRootDocument.Value) == 0
	case ast.Var:
		return v.Equal(ast.InputRootDocument.Value)
	}
	return false
}

// inputPrefix returns the path of a term that is input, an input ref that is
// ground strings all the way (input.a.b), or an alias of one.
func inputPrefix(t *ast.Term, aliases map[ast.Var][]string) ([]string, bool) {
	switch v := t.Value.(type) {
	case ast.Var:
		if v.Equal(ast.InputRootDocument.Value) {
			return []string{}, true
		}
		p, alias := aliases[v]
		return slices.Clone(p), alias
	case ast.Ref:
		base, rooted := refBase(v, aliases)
		if !rooted {
			return nil, false
		}
		p, rest := refPath(v)
		return append(slices.Clone(base), p...), rest == len(v)
	}
	return nil, false
}

// staticKey reads object.get's key argument when it is a constant string or
// array of strings.
func staticKey(t *ast.Term) ([]string, bool) {
	switch v := t.Value.(type) {
	case ast.String:
		return []string{string(v)}, true
	case *ast.Array:
		out := make([]string, 0, v.Len())
		for i := range v.Len() {
			s, isStr := v.Elem(i).Value.(ast.String)
			if !isStr {
				return nil, false
			}
			out = append(out, string(s))
		}
		return out, true
	}
	return nil, false
}

// normalizePaths sorts the paths and drops any a shorter one covers.
func normalizePaths(paths [][]string) [][]string {
	slices.SortFunc(paths, func(a, b []string) int { return slices.Compare(a, b) })
	var out [][]string
	for _, p := range paths {
		if len(out) > 0 && hasPrefix(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func hasPrefix(p, prefix []string) bool {
	return len(p) >= len(prefix) && slices.Equal(p[:len(prefix)], prefix)
}

// pathDigests digests the parts of one document the checks read, each path
// once however many checks read it. The document is an AST value, or the
// decoded JSON it was made from; both are written alike (see appendCanonical
// and appendCanonicalAny), so either finds the other's outcomes.
type pathDigests struct {
	root    ast.Value
	decoded any
	paths   [][]string
	buf     []byte
	sums    [][sha256.Size]byte
	state   []uint8 // 0: not yet, 1: done, 2: too large or deep
}

func newPathDigests(doc *Document, paths [][]string) *pathDigests {
	d := &pathDigests{root: doc.Value, decoded: doc.decoded, paths: paths}
	d.sums = make([][sha256.Size]byte, len(paths))
	d.state = make([]uint8, len(paths))
	return d
}

// key returns the memo key of check i, or false when the input is too large
// or too deep to digest.
func (d *pathDigests) key(i int, rs *readSet) (memoKey, bool) {
	k := memoKey{check: i}
	if len(rs.ids) == 1 {
		if !d.digest(rs.ids[0]) {
			return memoKey{}, false
		}
		k.sum = d.sums[rs.ids[0]]
		return k, true
	}
	h := sha256.New()
	for _, id := range rs.ids {
		if !d.digest(id) {
			return memoKey{}, false
		}
		h.Write(d.sums[id][:])
	}
	h.Sum(k.sum[:0])
	return k, true
}

func (d *pathDigests) digest(id int) bool {
	switch d.state[id] {
	case 1:
		return true
	case 2:
		return false
	}
	p := d.paths[id]
	d.buf = d.buf[:0]
	// The path itself goes in, so that the same value read at two places
	// digests differently.
	for _, seg := range p {
		d.buf = appendLen(d.buf, len(seg))
		d.buf = append(d.buf, seg...)
	}
	ok := true
	if d.root != nil {
		v := d.root
		for _, seg := range p {
			obj, isObj := v.(ast.Object)
			if !isObj {
				v = nil
				break
			}
			t := obj.Get(ast.InternedTerm(seg))
			if t == nil {
				v = nil
				break
			}
			v = t.Value
		}
		if v == nil {
			d.buf = append(d.buf, 'u')
		} else {
			d.buf, ok = appendCanonical(d.buf, v, 0)
		}
	} else {
		v, found := d.decoded, true
		for _, seg := range p {
			obj, isObj := v.(map[string]any)
			if !isObj {
				found = false
				break
			}
			if v, found = obj[seg]; !found {
				break
			}
		}
		if !found {
			d.buf = append(d.buf, 'u')
		} else {
			d.buf, ok = appendCanonicalShared(d.buf, v)
		}
	}
	if !ok {
		d.state[id] = 2
		return false
	}
	d.sums[id] = sha256.Sum256(d.buf)
	d.state[id] = 1
	return true
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
func (e *Engine) recall(doc *Document, run []int, out []reports.Result) ([]int, map[int]memoKey) {
	if e.memo == nil {
		return run, nil
	}
	d := newPathDigests(doc, e.readPaths)
	keys := make(map[int]memoKey, len(run))
	left := run[:0:0]
	for _, i := range run {
		rs := e.reads[i]
		if rs == nil || !e.memo.worthLooking(i) {
			left = append(left, i)
			continue
		}
		k, ok := d.key(i, rs)
		if !ok {
			left = append(left, i)
			continue
		}
		m, hit := e.memo.load(k)
		e.memo.count(i, hit)
		if hit {
			e.decide(&out[i], slices.Clone(m.deny), slices.Clone(m.skip))
			continue
		}
		keys[i] = k
		left = append(left, i)
	}
	return left, keys
}

// remember stores check i's outcome under the key recall gave it.
func (e *Engine) remember(keys map[int]memoKey, i int, deny, skip []string) {
	k, ok := keys[i]
	if !ok {
		return
	}
	e.memo.store(k, &memoEntry{deny: slices.Clone(deny), skip: slices.Clone(skip)})
}

// refPath returns the leading string segments of a ref after its head, and
// the index of the first segment that is not a string.
func refPath(ref ast.Ref) ([]string, int) {
	p := []string{}
	i := 1
	for ; i < len(ref); i++ {
		s, isStr := ref[i].Value.(ast.String)
		if !isStr {
			break
		}
		p = append(p, string(s))
	}
	return p, i
}
