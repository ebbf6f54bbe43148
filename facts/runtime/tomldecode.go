package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"

	"github.com/gpuhost/gpuhost/facts/collect"
)

// seenKind is what made a key of a TOML document, which decides what a later
// header or key may do with it. These are go-toml's rules, so that a file
// decodes here exactly when toml.Unmarshal would decode it; go-toml looks a
// key up among every key met before it, which makes a file of many keys
// cost the square of their number, so the rules are kept here in maps.
type seenKind uint8

const (
	// seenValue is a scalar, array or inline table: nothing extends it.
	seenValue seenKind = iota + 1
	// seenDotted is a table a dotted key made; only dotted keys extend it.
	seenDotted
	// seenImplicit is a table a longer header made; its own header may
	// still come, once.
	seenImplicit
	// seenHeader is a table its own [header] made.
	seenHeader
	// seenArray is an array of tables; the keys under it are its last
	// element's.
	seenArray
)

// String names a kind as go-toml's errors do.
func (k seenKind) String() string {
	switch k {
	case seenValue:
		return "value"
	case seenDotted:
		return "kv-table"
	case seenArray:
		return "array-table"
	}
	return "table"
}

// seenKey is one key met in a document, with the keys under it when it is a
// table.
type seenKey struct {
	kind seenKind
	sub  map[string]*seenKey
}

// seenLeaf stands for every value: no key is ever added under a value, so
// one is shared.
var seenLeaf = &seenKey{kind: seenValue}

func newSeen(kind seenKind) *seenKey {
	return &seenKey{kind: kind, sub: map[string]*seenKey{}}
}

// tomlDoc is one TOML document decoded: Values as toml.Unmarshal decodes it
// into a map[string]any; Lines its line tree, the document's tables and keys
// in its own shape, each key's value replaced by where it is set
// (collect.FileLine), each table holding its header's place under headerKey
// (having the values' shape, the tree migrates and merges as the values do,
// so after containerd's imports it says which file set each setting last;
// arrays of tables are left out, as no setting the checks read is in one);
// and Count the values it holds: every part of a key (of a key/value, a
// header or an inline table's key, as each may make a table) and every array
// element counting one.
type tomlDoc struct {
	Values, Lines map[string]any
	Count         int
}

// tomlDecoder decodes a document in one pass over go-toml's parser.
type tomlDecoder struct {
	display string
	data    []byte
	// held is what the files of the configuration before this one hold;
	// limit the most all may hold.
	held, limit int
	doc         tomlDoc
	seen        *seenKey

	// The table key/values go to: its values, its line tree (nil inside an
	// array of tables, which the line tree leaves out) and its keys.
	values, lines map[string]any
	keys          *seenKey

	// lineOff is where line counting stopped, on line line.
	lineOff, line int
	// linesErr is the line tree's own error, reported once the document
	// has decoded: go-toml's errors come first.
	linesErr error
}

// decodeTOML decodes data, named display in errors, in time linear in its
// size. held values are held already by the files it is merged with; a
// document that takes them past limit is refused.
func decodeTOML(display string, data []byte, held, limit int) (*tomlDoc, error) {
	d := &tomlDecoder{
		display: display,
		data:    data,
		held:    held,
		limit:   limit,
		doc:     tomlDoc{Values: map[string]any{}, Lines: map[string]any{}},
		seen:    newSeen(seenHeader),
		line:    1,
	}
	d.values, d.lines, d.keys = d.doc.Values, d.doc.Lines, d.seen
	var p unstable.Parser
	p.Reset(data)
	for p.NextExpression() {
		if err := d.expression(p.Expression()); err != nil {
			return nil, err
		}
	}
	if err := p.Error(); err != nil {
		var perr *unstable.ParserError
		if errors.As(err, &perr) {
			return nil, d.errAt(d.offsetOf(perr.Highlight), "%s", perr.Message)
		}
		return nil, fmt.Errorf("parsing %s: %w", display, err)
	}
	if d.linesErr != nil {
		return nil, fmt.Errorf("parsing %s: %w", display, d.linesErr)
	}
	return &d.doc, nil
}

func (d *tomlDecoder) expression(e *unstable.Node) error {
	switch e.Kind {
	case unstable.Table:
		if err := d.countKey(e); err != nil {
			return err
		}
		if err := d.table(e); err != nil {
			return err
		}
		if d.linesErr != nil {
			break
		}
		t, first, err := walk(d.doc.Lines, e.Key(), maxTOMLDepth)
		if err != nil {
			d.linesErr = err
			break
		}
		t[headerKey] = d.at(first)
		d.lines = t
	case unstable.ArrayTable:
		if err := d.countKey(e); err != nil {
			return err
		}
		if err := d.arrayTable(e); err != nil {
			return err
		}
		d.lines = nil
	case unstable.KeyValue:
		if err := d.keyValue(e); err != nil {
			return err
		}
		if d.lines != nil && d.linesErr == nil {
			d.linesErr = setLines(d.lines, e, d.at, 0)
		}
	}
	return nil
}

// path walks the parts of a header but the last from the root, as go-toml
// does: through tables and arrays of tables (into their last element),
// making the tables missing.
func (d *tomlDecoder) path(parts []*unstable.Node) (*seenKey, map[string]any, error) {
	keys, values := d.seen, d.doc.Values
	for _, part := range parts {
		name := string(part.Data)
		k := keys.sub[name]
		switch {
		case k == nil:
			k = newSeen(seenImplicit)
			keys.sub[name] = k
		case k.kind == seenValue:
			return nil, nil, d.keyErr(parts[0], "key %s already exists as a value", name)
		}
		keys, values = k, childTable(values, name)
	}
	return keys, values, nil
}

// table opens a [header]: the tables it names may have been made by longer
// headers before, never by its own header or a dotted key.
func (d *tomlDecoder) table(e *unstable.Node) error {
	parts := keyParts(e)
	keys, values, err := d.path(parts[:len(parts)-1])
	if err != nil {
		return err
	}
	first, name := parts[0], string(parts[len(parts)-1].Data)
	switch k := keys.sub[name]; {
	case k == nil:
		k = newSeen(seenHeader)
		keys.sub[name] = k
		d.keys = k
	case k.kind == seenImplicit:
		k.kind = seenHeader
		d.keys = k
	case k.kind == seenHeader:
		return d.keyErr(first, "table %s already exists", name)
	case k.kind == seenDotted:
		return d.keyErr(first, "table %s already exists as defined by a dotted key", name)
	case k.kind == seenArray:
		return d.keyErr(first, "table %s already exists as an array of tables", name)
	default:
		return d.keyErr(first, "key %s should be a table, not a %s", name, k.kind)
	}
	d.values = childTable(values, name)
	return nil
}

// arrayTable opens a [[header]]: a new element of its array, whose keys
// start afresh.
func (d *tomlDecoder) arrayTable(e *unstable.Node) error {
	parts := keyParts(e)
	keys, values, err := d.path(parts[:len(parts)-1])
	if err != nil {
		return err
	}
	first, name := parts[0], string(parts[len(parts)-1].Data)
	k := keys.sub[name]
	switch {
	case k == nil:
		k = newSeen(seenArray)
		keys.sub[name] = k
	case k.kind != seenArray:
		return d.keyErr(first, "key %s already exists as a %s, but should be an array table", name, k.kind)
	default:
		k.sub = map[string]*seenKey{}
	}
	elems, _ := values[name].([]any)
	elem := map[string]any{}
	values[name] = append(elems, elem)
	d.keys, d.values = k, elem
	return nil
}

// keyValue sets a key of the current table. All its checks come before its
// value is converted, as in go-toml, so that the same error is reported.
func (d *tomlDecoder) keyValue(e *unstable.Node) error {
	if err := d.countKey(e); err != nil {
		return err
	}
	parts := keyParts(e)
	name, err := claimKey(d.keys, parts)
	if err != nil {
		return d.keyErr(parts[0], "%s", err)
	}
	if err := checkInline(e.Value()); err != nil {
		return d.keyErr(parts[0], "%s", err)
	}
	values := d.values
	for _, part := range parts[:len(parts)-1] {
		values = childTable(values, string(part.Data))
	}
	v, err := d.value(e.Value())
	if err != nil {
		return err
	}
	values[name] = v
	return nil
}

// claimKey records a (dotted) key in the table keys: all but its last part
// are tables dotted keys made, and the last is new. It returns the last.
func claimKey(keys *seenKey, parts []*unstable.Node) (string, error) {
	for _, part := range parts[:len(parts)-1] {
		name := string(part.Data)
		k := keys.sub[name]
		switch {
		case k == nil:
			k = newSeen(seenDotted)
			keys.sub[name] = k
		case k.kind != seenDotted:
			return "", fmt.Errorf("key %s is already defined", name)
		}
		keys = k
	}
	name := string(parts[len(parts)-1].Data)
	if _, ok := keys.sub[name]; ok {
		return "", fmt.Errorf("key %s is already defined", name)
	}
	keys.sub[name] = seenLeaf
	return name, nil
}

// checkInline holds an inline table, and each inline table in an array, to
// the rules of a table of its own.
func checkInline(v *unstable.Node) error {
	switch v.Kind {
	case unstable.InlineTable:
		keys := newSeen(seenValue)
		for it := v.Children(); it.Next(); {
			kv := it.Node()
			if kv.Kind != unstable.KeyValue {
				continue
			}
			if _, err := claimKey(keys, keyParts(kv)); err != nil {
				return err
			}
			if err := checkInline(kv.Value()); err != nil {
				return err
			}
		}
	case unstable.Array:
		for it := v.Children(); it.Next(); {
			if err := checkInline(it.Node()); err != nil {
				return err
			}
		}
	}
	return nil
}

// value converts a value node to what toml.Unmarshal gives for it in a
// map[string]any.
func (d *tomlDecoder) value(n *unstable.Node) (any, error) {
	switch n.Kind {
	case unstable.String:
		return string(n.Data), nil
	case unstable.Bool:
		return n.Data[0] == 't', nil
	case unstable.Array:
		var elems []any
		for it := n.Children(); it.Next(); {
			c := it.Node()
			if c.Kind == unstable.Comment {
				continue
			}
			if err := d.count(c, 1); err != nil {
				return nil, err
			}
			v, err := d.value(c)
			if err != nil {
				return nil, err
			}
			elems = append(elems, v)
		}
		if elems == nil {
			elems = []any{}
		}
		return elems, nil
	case unstable.InlineTable:
		m := map[string]any{}
		for it := n.Children(); it.Next(); {
			kv := it.Node()
			if kv.Kind != unstable.KeyValue {
				continue
			}
			if err := d.countKey(kv); err != nil {
				return nil, err
			}
			parts := keyParts(kv)
			t := m
			for _, part := range parts[:len(parts)-1] {
				t = childTable(t, string(part.Data))
			}
			v, err := d.value(kv.Value())
			if err != nil {
				return nil, err
			}
			t[string(parts[len(parts)-1].Data)] = v
		}
		return m, nil
	case unstable.Integer:
		if v, ok := plainInt(n.Data); ok {
			return v, nil
		}
	}
	return d.scalar(n)
}

// plainInt reads the decimal integers nearly every file holds, of digits
// alone, too few to overflow; go-toml reads the rest.
func plainInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	return v, err == nil
}

// scalar converts a number, date or time by go-toml's own rules, on a
// document holding that value alone: one key costs go-toml nothing to track.
func (d *tomlDecoder) scalar(n *unstable.Node) (any, error) {
	doc := append([]byte("v="), n.Data...)
	var one map[string]any
	if err := toml.Unmarshal(doc, &one); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			return nil, d.errAt(int(n.Raw.Offset), "%s", strings.TrimPrefix(de.Error(), "toml: "))
		}
		return nil, d.errAt(int(n.Raw.Offset), "%s", err)
	}
	v, ok := one["v"]
	if !ok {
		return nil, d.errAt(int(n.Raw.Offset), "a %s that does not decode", n.Kind)
	}
	return v, nil
}

// countKey counts the parts of a header's or key's key: each may make a
// table.
func (d *tomlDecoder) countKey(e *unstable.Node) error {
	n := 0
	for it := e.Key(); it.Next(); {
		n++
	}
	return d.count(e, n)
}

// count adds n values to the document's, refusing it past the limit.
func (d *tomlDecoder) count(at *unstable.Node, n int) error {
	d.doc.Count += n
	if d.held+d.doc.Count <= d.limit {
		return nil
	}
	return fmt.Errorf("parsing %s: more than %d keys and array elements in one containerd configuration with its imports", d.where(d.offsetOfNode(at)), d.limit)
}

// childTable is the table name in t, made when missing, or the last element
// of an array of tables there; a header or key go-toml's rules allow finds
// one of these, or nothing.
func childTable(t map[string]any, name string) map[string]any {
	switch v := t[name].(type) {
	case map[string]any:
		return v
	case []any:
		if len(v) > 0 {
			if last, ok := v[len(v)-1].(map[string]any); ok {
				return last
			}
		}
	}
	m := map[string]any{}
	t[name] = m
	return m
}

func keyParts(e *unstable.Node) []*unstable.Node {
	var parts []*unstable.Node
	for it := e.Key(); it.Next(); {
		parts = append(parts, it.Node())
	}
	return parts
}

// at is where a key is written. Keys come in the order of the document, so
// counting newlines from the last key onwards counts each once.
func (d *tomlDecoder) at(n *unstable.Node) collect.FileLine {
	off := min(int(n.Raw.Offset), len(d.data))
	if off >= d.lineOff {
		d.line += bytes.Count(d.data[d.lineOff:off], []byte("\n"))
	} else {
		d.line -= bytes.Count(d.data[off:d.lineOff], []byte("\n"))
	}
	d.lineOff = off
	return collect.FileLine{File: d.display, Line: d.line}
}

// offsetOf is where b, a slice of the document, starts in it, or -1.
func (d *tomlDecoder) offsetOf(b []byte) int {
	off := cap(d.data) - cap(b)
	if off < 0 || off+len(b) > len(d.data) {
		return -1
	}
	return off
}

// offsetOfNode is where an expression starts: its key's first part.
func (d *tomlDecoder) offsetOfNode(n *unstable.Node) int {
	switch n.Kind {
	case unstable.KeyValue, unstable.Table, unstable.ArrayTable:
		if it := n.Key(); it.Next() {
			return int(it.Node().Raw.Offset)
		}
	}
	return int(n.Raw.Offset)
}

func (d *tomlDecoder) keyErr(part *unstable.Node, format string, args ...any) error {
	return d.errAt(int(part.Raw.Offset), format, args...)
}

// errAt words an error at offset off as go-toml's DecodeError does.
func (d *tomlDecoder) errAt(off int, format string, args ...any) error {
	return fmt.Errorf("parsing %s: toml: %s", d.where(off), fmt.Sprintf(format, args...))
}

// where names offset off as FILE:LINE, or the file alone for an offset
// outside it.
func (d *tomlDecoder) where(off int) string {
	if off < 0 || off > len(d.data) {
		return d.display
	}
	return fmt.Sprintf("%s:%d", d.display, bytes.Count(d.data[:off], []byte("\n"))+1)
}
