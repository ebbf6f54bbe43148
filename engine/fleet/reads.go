package fleet

import (
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/open-policy-agent/opa/v1/ast"
)

// What a check reads from input decides which hosts can share its outcome.
// Reading a whole array is coarse: a GPU check that looks at each GPU's ECC
// mode also names the GPU in its message, so "the whole devices array" would
// include every host's own UUIDs and temperatures and no two hosts would ever
// share an outcome. The analysis below is finer in three ways, each chosen so
// that equal digests still mean equal outcomes:
//
//   - a local bound to each member of a collection (some d in input.gpu.devices)
//     reads only the fields taken from it, member by member;
//   - count(x) reads only how many members x has;
//   - a value that only goes into the text of a deny, skip or error message is read
//     for its presence alone. Its value changes the message but never whether
//     the message exists (sprintf cannot fail on its arguments), so such a
//     read is enough to recall a pass, and only a pass: see readSet.

// step is one step of a path into input: an object key, or each member of a
// collection.
type step struct {
	key  string
	each bool
}

// readMode is how much of the value at a path a check depends on. A value
// read tells everything the others do, and any read tells presence; a
// printed read and a count tell different things (see normalizeItems).
type readMode uint8

const (
	// readPresence: whether the path resolves, and the type of whatever
	// stops it from resolving.
	readPresence readMode = iota + 1
	// readPrinted: the value goes only into the text of a message. The
	// pass key reads its presence; the full key reads its value.
	readPrinted
	// readLength: the value's type and, for a collection, its size.
	readLength
	// readValue: the whole value.
	readValue
)

// readItem is one path a check reads, and how.
type readItem struct {
	path []step
	mode readMode
}

// String writes the item the way the tests name it: gpu.devices[*].uuid?
// for a presence read, gpu.devices[*].uuid! for a printed one, #packages for
// a count.
func (it readItem) String() string {
	var b strings.Builder
	if it.mode == readLength {
		b.WriteByte('#')
	}
	for i, s := range it.path {
		switch {
		case s.each:
			b.WriteString("[*]")
		case i > 0:
			b.WriteByte('.')
			b.WriteString(s.key)
		default:
			b.WriteString(s.key)
		}
	}
	switch it.mode {
	case readPresence:
		b.WriteByte('?')
	case readPrinted:
		b.WriteByte('!')
	}
	return b.String()
}

// name tells items apart for analyzeReads' list: String cannot, since a key
// may hold a dot or a question mark (input["a.b"] against input.a.b).
func (it readItem) name() string {
	b := []byte{byte(it.mode)}
	for _, s := range it.path {
		if s.each {
			b = append(b, '*')
			continue
		}
		b = appendText(b, '.', s.key)
	}
	return string(b)
}

func comparePaths(a, b []step) int {
	for i := range min(len(a), len(b)) {
		if a[i].each != b[i].each {
			if a[i].each {
				return 1
			}
			return -1
		}
		if c := strings.Compare(a[i].key, b[i].key); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func pathHasPrefix(p, prefix []step) bool {
	return len(p) >= len(prefix) && slices.Equal(p[:len(prefix)], prefix)
}

// normalizeItems sorts the items and drops any that another tells: a
// presence read of a path read any other way, and any read of a path at or
// under one read whole. A printed read and a count of one path both stay:
// which tells more depends on the key.
func normalizeItems(items []readItem) []readItem {
	slices.SortFunc(items, func(a, b readItem) int {
		if c := comparePaths(a.path, b.path); c != 0 {
			return c
		}
		return int(b.mode) - int(a.mode)
	})
	var out []readItem
	var values [][]step
	for i, it := range items {
		samePath := i > 0 && slices.Equal(items[i-1].path, it.path)
		if samePath && (items[i-1].mode == it.mode || it.mode == readPresence) {
			continue // a larger or equal mode of the same path came first
		}
		covered := false
		for _, v := range values {
			if pathHasPrefix(it.path, v) {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		out = append(out, it)
		if it.mode == readValue {
			values = append(values, it.path)
		}
	}
	return out
}

// forKey is items as one of a check's keys reads them: printed values by
// their presence for the pass key, whole for the full key.
func forKey(items []readItem, pass bool) []readItem {
	out := make([]readItem, len(items))
	for i, it := range items {
		out[i] = it
		if it.mode == readPrinted {
			out[i].mode = readValue
			if pass {
				out[i].mode = readPresence
			}
		}
	}
	return normalizeItems(out)
}

// analyzeReads finds, for every check, the input its rules and every rule
// they depend on read, and lists every item some check reads once.
func analyzeReads(compiler *ast.Compiler, checks []engine.Check) ([]*readSet, []readItem) {
	byPkg := map[string][]*ast.Rule{}
	for _, m := range compiler.Modules {
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
		byPkg[pkg] = append(byPkg[pkg], m.Rules...)
	}
	out := make([]*readSet, len(checks))
	var all []readItem
	index := map[string]int{}
	idsOf := func(items []readItem) []int {
		ids := make([]int, 0, len(items))
		for _, it := range items {
			name := it.name()
			id, seen := index[name]
			if !seen {
				id = len(all)
				index[name] = id
				all = append(all, it)
			}
			ids = append(ids, id)
		}
		return ids
	}
	for i, c := range checks {
		items, ok := readsOf(compiler, byPkg[c.Package])
		if !ok {
			continue
		}
		full := forKey(items, false)
		rs := &readSet{items: items, ids: idsOf(full), full: full}
		if slices.ContainsFunc(items, func(it readItem) bool { return it.mode == readPrinted }) {
			rs.passIDs = idsOf(forKey(items, true))
		}
		out[i] = rs
	}
	return out, all
}

// readsOf analyses a check's rules and everything they depend on. It
// returns false when the check reads the whole document, reads it through
// something the analysis cannot follow, or calls a nondeterministic builtin.
func readsOf(compiler *ast.Compiler, roots []*ast.Rule) ([]readItem, bool) {
	output := map[*ast.Rule]bool{}
	for _, r := range roots {
		output[r] = isOutputRule(compiler, r)
	}
	seen := map[*ast.Rule]bool{}
	queue := slices.Clone(roots)
	var items []readItem
	for len(queue) > 0 {
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
		got, ok := analyzeRule(r, output[r])
		if !ok {
			return nil, false
		}
		items = append(items, got...)
	}
	items = normalizeItems(items)
	// A check that reads the whole document reads every host's own name:
	// its outcomes would fill the memo and never be asked for again.
	if len(items) > 0 && len(items[0].path) == 0 {
		return nil, false
	}
	return items, true
}

// isOutputRule reports whether r adds to its package's deny, skip or error set,
// which the engine reads and no rule does: only then is a message's text
// known to end in the outcome and nowhere else.
func isOutputRule(compiler *ast.Compiler, r *ast.Rule) bool {
	if r.Head.RuleKind() != ast.MultiValue || r.Head.Value != nil || len(r.Head.Args) > 0 {
		return false
	}
	if name := r.Head.Ref().String(); name != "deny" && name != "skip" && name != "error" {
		return false
	}
	return len(compiler.Graph.Dependents(r)) == 0
}
