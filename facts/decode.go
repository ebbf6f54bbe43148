package facts

import (
	"bytes"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"reflect"
	"strconv"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// jsonOptions are the syntax rules a facts document is held to: those of
// encoding/json's Decoder, which jsonschema.UnmarshalJSON (the reference
// parse) uses, where invalid UTF-8 becomes U+FFFD rather than an error, but
// with a repeated name refused. Two readers can take a repeated name two
// ways (the first value or the last), so a document that has one could
// pass the scan and mean something else to the next tool. decodeWhole
// refuses it too, so that both paths agree.
var jsonOptions = []jsontext.Options{jsontext.AllowDuplicateNames(false), jsontext.AllowInvalidUTF8(true)}

// decoderPool keeps jsontext decoders, whose buffers and name tables are
// the bulk of a small document's allocations.
var decoderPool = sync.Pool{New: func() any { return jsontext.NewDecoder(bytes.NewReader(nil)) }}

// parser turns JSON into the tree the validator and the engine take:
// objects as map[string]any, arrays as []any, numbers as json.Number.
type parser struct {
	dec *jsontext.Decoder
	rd  bytes.Reader
	// names holds the schema's property names, so that the names every
	// document repeats share one string instead of each allocating its own.
	names map[string]string
	// nested, when set, holds the trees of arrays nested inside a member
	// (a GPU's NVLink list) that other documents repeat byte for byte while
	// the member around them differs. Objects are left out: the small ones
	// cost less to parse than to find, and the large ones hold what differs
	// (a GPU's UUID and temperature).
	nested *memberMemo
	data   []byte
	depth  int
}

func newParser(names map[string]string) *parser {
	return &parser{dec: decoderPool.Get().(*jsontext.Decoder), names: names}
}

// Nested arrays between nestedMin and nestedMax bytes are looked up in the
// parser's nested memo: smaller ones cost less to parse than to look up,
// and larger ones (the list of GPUs) tend to hold what differs.
const (
	nestedMin = 48
	nestedMax = 512
)

// release returns the decoder to the pool; p must not be used afterwards.
func (p *parser) release() {
	p.rd.Reset(nil)
	p.dec.Reset(&p.rd)
	decoderPool.Put(p.dec)
	p.dec = nil
}

// reset points the parser at data.
func (p *parser) reset(data []byte) {
	p.data = data
	p.depth = 0
	p.rd.Reset(data)
	p.dec.Reset(&p.rd, jsonOptions...)
}

// value reads one whole value. Nesting is bounded by the decoder, which
// refuses more than 10,000 levels, as encoding/json does.
func (p *parser) value() (any, error) {
	kind := p.dec.PeekKind()
	if kind == '[' && p.nested != nil && p.depth > 0 {
		return p.nestedValue()
	}
	return p.plainValue(kind)
}

// nestedValue reads an array nested inside a member through the nested
// memo. A hit still has the decoder read the bytes, so that they are held
// to the same syntax rules as any other; it only saves building the tree.
func (p *parser) nestedValue() (any, error) {
	// The decoder stands after the last token it returned, which leaves
	// the separator before this value (a name's colon, an element's comma)
	// still to read.
	start := skipSpace(p.data, int(p.dec.InputOffset()))
	if start < len(p.data) && (p.data[start] == ':' || p.data[start] == ',') {
		start = skipSpace(p.data, start+1)
	}
	var end ValueEnd
	n := -1
	if start < len(p.data) {
		n = end.Feed(p.data[start:min(len(p.data), start+nestedMax)])
	}
	if n < nestedMin {
		return p.plainValue(p.dec.PeekKind())
	}
	raw := p.data[start : start+n]
	if tree, ok := p.nested.get("", raw); ok {
		if err := p.dec.SkipValue(); err != nil {
			return nil, err
		}
		return tree, nil
	}
	tree, err := p.plainValue(p.dec.PeekKind())
	if err == nil {
		p.nested.put("", raw, tree)
	}
	return tree, err
}

// plainValue reads one value of the given kind, building its tree.
func (p *parser) plainValue(kind jsontext.Kind) (any, error) {
	switch kind {
	case '{':
		if _, err := p.dec.ReadToken(); err != nil {
			return nil, err
		}
		p.depth++
		defer func() { p.depth-- }()
		obj := map[string]any{}
		for p.dec.PeekKind() != '}' {
			name, err := p.str(true)
			if err != nil {
				return nil, err
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			obj[name] = v
		}
		if _, err := p.dec.ReadToken(); err != nil {
			return nil, err
		}
		return obj, nil
	case '[':
		if _, err := p.dec.ReadToken(); err != nil {
			return nil, err
		}
		p.depth++
		defer func() { p.depth-- }()
		arr := []any{}
		for p.dec.PeekKind() != ']' {
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if _, err := p.dec.ReadToken(); err != nil {
			return nil, err
		}
		return arr, nil
	case '"':
		return p.str(false)
	case '0':
		raw, err := p.dec.ReadValue()
		if err != nil {
			return nil, err
		}
		if n, ok := smallNumber(raw); ok {
			return n, nil
		}
		return json.Number(raw), nil
	default:
		// null, true, false, or the decoder's error for anything else.
		tok, err := p.dec.ReadToken()
		if err != nil {
			return nil, err
		}
		switch tok.Kind() {
		case 'n':
			return nil, nil
		case 't', 'f':
			return tok.Bool(), nil
		}
		return nil, fmt.Errorf("unexpected %v", tok.Kind())
	}
}

// smallNumbers holds the boxed json.Number of every integer below
// len(smallNumbers). Facts are full of them (indexes, counters that are
// zero, link numbers, PCIe widths), and sharing one boxed value each saves
// two allocations per number.
var smallNumbers = func() (t [1024]any) {
	for i := range t {
		t[i] = json.Number(strconv.Itoa(i))
	}
	return t
}()

// smallNumber returns the shared value of raw when it is an integer in
// smallNumbers written the canonical way (no sign, no leading zero).
func smallNumber(raw []byte) (any, bool) {
	if len(raw) == 0 || len(raw) > 4 || (raw[0] == '0' && len(raw) > 1) {
		return nil, false
	}
	n := 0
	for _, c := range raw {
		if c < '0' || c > '9' {
			return nil, false
		}
		n = n*10 + int(c-'0')
	}
	if n >= len(smallNumbers) {
		return nil, false
	}
	return smallNumbers[n], true
}

// str reads a string. Most strings hold no escape and valid UTF-8, so their
// text is the raw bytes between the quotes; the rest are unquoted by the
// decoder itself so that every replacement rule stays its own.
func (p *parser) str(name bool) (string, error) {
	raw, err := p.dec.ReadValue()
	if err != nil {
		return "", err
	}
	if raw.Kind() != '"' {
		return "", fmt.Errorf("want a string, got %v", raw.Kind())
	}
	names := p.names
	if !name {
		names = nil
	}
	return unquote(raw, names)
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string starting at i. It only
// finds the closing quote; what lies between is checked by whoever parses
// the string.
func skipString(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return 0, false
	}
	return skipValue(data, i)
}

// skipValue returns the index just past the value starting at i (see
// ValueEnd). The bytes it spans are either ones the memo holds (parsed and
// validated before) or parsed now.
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	var end ValueEnd
	if n := end.Feed(data[i:]); n > 0 {
		return i + n, true
	}
	if end.Scalar() {
		return len(data), true
	}
	return 0, false
}

// ValueEnd finds where one JSON value ends, fed its bytes in pieces: at the
// bracket that closes it outside any string, at a string's closing quote,
// or, for a number or literal, where its letters stop. It checks nothing
// else: it cuts, and the parser that reads the bytes checks them. The zero
// value is ready for a value's first byte.
type ValueEnd struct {
	started, scalar, inString, escaped bool
	depth                              int
	// fed counts the bytes of a scalar before this piece.
	fed int
}

// Scalar reports whether the value is a number or literal, which ends only
// with the input when nothing follows it.
func (s *ValueEnd) Scalar() bool { return s.scalar }

// structural marks the bytes that open or close a string or a collection.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

func isScalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '+' || c == '-' || c == '.'
}

// Feed scans the next piece of the value and returns the index in b just
// past its end, or -1 when the value goes on past b.
func (s *ValueEnd) Feed(b []byte) int {
	i := 0
	if !s.started && len(b) > 0 {
		s.started = true
		switch b[0] {
		case '{', '[', '"':
		default:
			s.scalar = true
		}
	}
	if s.scalar {
		for ; i < len(b); i++ {
			if !isScalarByte(b[i]) {
				if i == 0 && s.fed == 0 {
					return 1 // a stray byte is a value of its own
				}
				return i
			}
		}
		s.fed += len(b)
		return -1
	}
	for i < len(b) {
		if s.inString {
			if s.escaped {
				s.escaped = false
				i++
				continue
			}
			// Two vector scans beat a byte loop: most strings hold no
			// backslash before their closing quote.
			j := bytes.IndexByte(b[i:], '"')
			if j < 0 {
				j = len(b) - i
			}
			if k := bytes.IndexByte(b[i:i+j], '\\'); k >= 0 {
				s.escaped = true
				i += k + 1
				continue
			}
			if i += j; i == len(b) {
				return -1
			}
			s.inString = false
			i++
			if s.depth == 0 {
				return i
			}
			continue
		}
		for i < len(b) && !structural[b[i]] {
			i++
		}
		if i == len(b) {
			return -1
		}
		switch b[i] {
		case '"':
			s.inString = true
		case '{', '[':
			s.depth++
		case '}', ']':
			// A stray closing bracket ends a value of its own, which the
			// parser refuses, rather than running on to the input's end.
			if s.depth--; s.depth <= 0 {
				return i + 1
			}
		}
		i++
	}
	return -1
}

// unquote reads a string, raw with its quotes. Most strings hold no
// escape, control character or invalid UTF-8, so their text is the raw
// bytes between the quotes (a name the schema knows shares its string);
// the rest are unquoted by the decoder itself, which also checks them, so
// that every replacement rule stays its own.
func unquote(raw []byte, names map[string]string) (string, error) {
	text := raw[1 : len(raw)-1]
	plain := bytes.IndexByte(text, '\\') < 0 && utf8.Valid(text)
	for _, c := range text {
		if c < 0x20 {
			plain = false
			break
		}
	}
	if plain {
		if s, ok := names[string(text)]; ok {
			return s, nil
		}
		return string(text), nil
	}
	dec := jsontext.NewDecoder(bytes.NewReader(raw), jsonOptions...)
	tok, err := dec.ReadToken()
	if err != nil {
		return "", err
	}
	if tok.Kind() != '"' {
		return "", fmt.Errorf("want a string, got %v", tok.Kind())
	}
	return tok.String(), nil
}

// end reports whether only whitespace follows the value just read, as the
// reference parse demands.
func (p *parser) end() error {
	if _, err := p.dec.ReadToken(); err != io.EOF {
		return errors.New("invalid character after top-level value")
	}
	return nil
}

// parseJSON parses one whole document, with nested collections found in
// the nested memo when it is not nil.
func parseJSON(data []byte, names map[string]string, nested *memberMemo) (any, error) {
	p := newParser(names)
	defer p.release()
	p.reset(data)
	p.nested = nested
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return v, nil
}

// memoBytes bounds the raw JSON the member memo keeps. The parsed trees it
// holds are many times larger, so this also bounds their memory.
const memoBytes = 2 << 20

// maxSeen bounds the memo's admission set.
const maxSeen = 1 << 14

// memberMemo remembers top-level members that parsed and validated, keyed
// by their exact bytes: the same bytes are the same value, so the same
// verdict. Only valid members are kept; a document with a bad one always
// goes through the whole schema. A member is kept from its second sighting
// on: the members that differ on every host (the target, GPU counters)
// would otherwise fill it with trees that never come back. Safe for
// concurrent use.
type memberMemo struct {
	mu    sync.RWMutex
	limit int
	size  int
	trees map[string]map[string]any // member name, then raw bytes
	// seen holds a hash of each member met once; a collision only admits
	// a member early, since lookups compare the bytes themselves.
	seen map[uint64]struct{}
	seed maphash.Seed
	// shared holds the address of every map or slice in trees, for
	// SharedKey.
	shared map[memberKey]struct{}
}

// memberKey identifies a decoded map or non-empty slice by its address.
type memberKey struct {
	p unsafe.Pointer
	n int
}

// keyOf returns v's address; other values (and empty slices, which share
// no storage) have none worth keeping.
func keyOf(v any) (memberKey, bool) {
	switch x := v.(type) {
	case map[string]any:
		return memberKey{p: reflect.ValueOf(x).UnsafePointer(), n: -1}, x != nil
	case []any:
		return memberKey{p: unsafe.Pointer(unsafe.SliceData(x)), n: len(x)}, len(x) > 0
	}
	return memberKey{}, false
}

// SharedKey reports whether v, a top-level member of a value DecodeJSON
// returned, is shared with other documents (their bytes there were the
// same), and if so returns a comparable key naming it. The member stays
// what the key names for as long as the caller holds v, so a cache keyed by
// it must hold v too. Callers use it to do per-member work once per image
// rather than once per host.
func SharedKey(v any) (any, bool) {
	val, err := schema()
	if err != nil || val.memo == nil {
		return nil, false
	}
	k, ok := keyOf(v)
	if !ok {
		return nil, false
	}
	val.memo.mu.RLock()
	defer val.memo.mu.RUnlock()
	_, ok = val.memo.shared[k]
	return k, ok
}

func newMemberMemo(limit int) *memberMemo {
	return &memberMemo{limit: limit, trees: map[string]map[string]any{}, seen: map[uint64]struct{}{},
		seed: maphash.MakeSeed(), shared: map[memberKey]struct{}{}}
}

// get returns the tree of a member seen before. A nil memo holds nothing.
func (m *memberMemo) get(name string, raw []byte) (any, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	tree, ok := m.trees[name][string(raw)]
	return tree, ok
}

// put offers a valid member. When the memo would outgrow its limit it
// starts over; the shared members return at their next sightings.
func (m *memberMemo) put(name string, raw []byte, tree any) {
	if m == nil || len(raw) > m.limit {
		return
	}
	h := maphash.Bytes(m.seed, raw) ^ maphash.String(m.seed, name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.seen[h]; !ok {
		if len(m.seen) >= maxSeen {
			clear(m.seen)
		}
		m.seen[h] = struct{}{}
		return
	}
	if m.size+len(raw) > m.limit {
		clear(m.trees)
		clear(m.shared)
		m.size = 0
	}
	byRaw := m.trees[name]
	if byRaw == nil {
		byRaw = map[string]any{}
		m.trees[name] = byRaw
	}
	if _, ok := byRaw[string(raw)]; !ok {
		byRaw[string(raw)] = tree
		m.size += len(raw)
		if k, ok := keyOf(tree); ok {
			m.shared[k] = struct{}{}
		}
	}
}
