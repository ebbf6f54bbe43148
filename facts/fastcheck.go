package facts

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// node is one schema object compiled for fastCheck, which only ever says
// "valid for sure" or "ask the real validator". It knows the few keywords
// the facts schema uses; compileFast refuses a schema with any other, so a
// keyword it does not understand can never be skipped.
type node struct {
	ref        *node
	types      []string // empty: any type
	properties map[string]*node
	required   []string
	// closed forbids names outside properties; extra, when set, is the
	// schema of those names instead.
	closed  bool
	extra   *node
	items   *node
	minimum *big.Rat
	maximum *big.Rat
	// minInt and maxInt are the bounds again when both fit an int64 (an
	// absent bound is the int64 limit), so that plain integers, nearly
	// every number in a facts document, compare without big.Rat.
	minInt, maxInt int64
	intBounds      bool
	enum           []string
	hasEnum        bool
	pattern        *regexp.Regexp
	dateTime       bool
}

// annotations are keywords that never change whether a value is valid.
var annotations = map[string]bool{"$schema": true, "$id": true, "$defs": true, "title": true, "description": true, "$comment": true}

type fastCompiler struct {
	defs     map[string]any
	compiled map[string]*node
}

// compileFast compiles a schema document for fastCheck.
func compileFast(schema any) (*node, error) {
	root, ok := schema.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema is not an object")
	}
	defs, _ := root["$defs"].(map[string]any)
	c := &fastCompiler{defs: defs, compiled: map[string]*node{}}
	return c.node(root, 0)
}

func (c *fastCompiler) node(s any, depth int) (*node, error) {
	if depth > 64 {
		return nil, fmt.Errorf("schema nests too deep")
	}
	obj, ok := s.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema %v is not an object", s)
	}
	n := &node{}
	for k, v := range obj {
		var err error
		switch k {
		case "$ref":
			n.ref, err = c.ref(v, depth)
		case "type":
			n.types, err = stringList(v)
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("properties is not an object")
			}
			n.properties = map[string]*node{}
			for name, sub := range props {
				if n.properties[name], err = c.node(sub, depth+1); err != nil {
					return nil, err
				}
			}
		case "required":
			n.required, err = stringList(v)
		case "additionalProperties":
			if v == false {
				n.closed = true
			} else {
				n.extra, err = c.node(v, depth+1)
			}
		case "items":
			n.items, err = c.node(v, depth+1)
		case "minimum":
			n.minimum, err = rat(v)
		case "maximum":
			n.maximum, err = rat(v)
		case "enum":
			n.enum, err = stringList(v)
			n.hasEnum = true
		case "const":
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("const %v is not a string", v)
			}
			n.enum, n.hasEnum = []string{s}, true
		case "pattern":
			s, _ := v.(string)
			n.pattern, err = regexp.Compile(s)
		case "format":
			if v != "date-time" {
				return nil, fmt.Errorf("format %v", v)
			}
			n.dateTime = true
		default:
			if !annotations[k] {
				return nil, fmt.Errorf("keyword %q", k)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	if n.minimum != nil || n.maximum != nil {
		n.minInt, n.maxInt, n.intBounds = int64Bounds(n.minimum, n.maximum)
	}
	return n, nil
}

// int64Bounds gives the bounds as int64s, with an absent bound at the int64
// limit; ok is false when a bound is fractional or does not fit.
func int64Bounds(minimum, maximum *big.Rat) (lo, hi int64, ok bool) {
	lo, okLo := ratInt64(minimum, math.MinInt64)
	hi, okHi := ratInt64(maximum, math.MaxInt64)
	return lo, hi, okLo && okHi
}

// ratInt64 is r as an int64, or absent when r is nil.
func ratInt64(r *big.Rat, absent int64) (int64, bool) {
	if r == nil {
		return absent, true
	}
	if !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

// ref resolves "#/$defs/name" once, so that a recursive definition is one
// node referring to itself rather than an endless compile.
func (c *fastCompiler) ref(v any, depth int) (*node, error) {
	s, _ := v.(string)
	name, ok := strings.CutPrefix(s, "#/$defs/")
	if !ok || strings.ContainsAny(name, "/~%") {
		return nil, fmt.Errorf("$ref %v is not a local definition", v)
	}
	if n, ok := c.compiled[name]; ok {
		return n, nil
	}
	def, ok := c.defs[name]
	if !ok {
		return nil, fmt.Errorf("$ref %s: no such definition", s)
	}
	n := &node{}
	c.compiled[name] = n
	built, err := c.node(def, depth+1)
	if err != nil {
		return nil, err
	}
	*n = *built
	return n, nil
}

func stringList(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%v is not a string", e)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("%v is not a string or a list of strings", v)
}

func rat(v any) (*big.Rat, error) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, fmt.Errorf("%v is not a number", v)
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return nil, fmt.Errorf("%v is not a number", v)
	}
	return r, nil
}

// maxFastDepth bounds fastCheck's recursion; deeper values are left to the
// real validator.
const maxFastDepth = 200

// fastCheck reports whether v is certainly valid against n. False means
// "not certain": an invalid value, or a valid one in a form it does not
// judge (an integer written 2.0, a leap second); the caller then asks the
// real validator, whose verdict stands.
func (n *node) fastCheck(v any, depth int) bool {
	if depth > maxFastDepth {
		return false
	}
	if n.ref != nil && !n.ref.fastCheck(v, depth+1) {
		return false
	}
	if len(n.types) > 0 && !n.typeOK(v) {
		return false
	}
	if n.hasEnum {
		if s, ok := v.(string); !ok || !contains(n.enum, s) {
			return false
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for _, name := range n.required {
			if _, ok := x[name]; !ok {
				return false
			}
		}
		if n.properties == nil && !n.closed && n.extra == nil {
			return true
		}
		for name, val := range x {
			sub, ok := n.properties[name]
			switch {
			case ok:
			case n.closed:
				return false
			case n.extra != nil:
				sub = n.extra
			default:
				continue
			}
			if !sub.fastCheck(val, depth+1) {
				return false
			}
		}
	case []any:
		if n.items != nil {
			for _, e := range x {
				if !n.items.fastCheck(e, depth+1) {
					return false
				}
			}
		}
	case string:
		if n.pattern != nil && !n.pattern.MatchString(x) {
			return false
		}
		if n.dateTime && !plainDateTime(x) {
			return false
		}
	case json.Number:
		if n.intBounds {
			if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
				return i >= n.minInt && i <= n.maxInt
			}
		}
		if n.minimum != nil || n.maximum != nil {
			r, ok := new(big.Rat).SetString(string(x))
			if !ok || n.minimum != nil && r.Cmp(n.minimum) < 0 || n.maximum != nil && r.Cmp(n.maximum) > 0 {
				return false
			}
		}
	}
	return true
}

func (n *node) typeOK(v any) bool {
	for _, t := range n.types {
		switch x := v.(type) {
		case nil:
			if t == "null" {
				return true
			}
		case bool:
			if t == "boolean" {
				return true
			}
		case string:
			if t == "string" {
				return true
			}
		case map[string]any:
			if t == "object" {
				return true
			}
		case []any:
			if t == "array" {
				return true
			}
		case json.Number:
			if t == "number" || t == "integer" && plainInteger(string(x)) {
				return true
			}
		}
	}
	return false
}

// plainInteger is an integer written without fraction or exponent; 2.0 and
// 2e0 are integers too, but the real validator judges those.
func plainInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// plainDateTime accepts the RFC 3339 date-times collectors write
// (2025-03-01T12:00:00Z, with an optional fraction or a numeric offset),
// with every field in range. Lower-case separators, leap seconds and the
// like are valid too, but left to the real validator.
func plainDateTime(s string) bool {
	if len(s) < len("2006-01-02T15:04:05Z") || s[10] != 'T' {
		return false
	}
	digits := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		}
		return true
	}
	if !digits(s[0:4]) || s[4] != '-' || !digits(s[5:7]) || s[7] != '-' || !digits(s[8:10]) ||
		!digits(s[11:13]) || s[13] != ':' || !digits(s[14:16]) || s[16] != ':' || !digits(s[17:19]) {
		return false
	}
	rest := s[19:]
	if strings.HasPrefix(rest, ".") {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 1 {
			return false
		}
		rest = rest[i:]
	}
	switch {
	case rest == "Z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && digits(rest[1:3]) && rest[3] == ':' && digits(rest[4:6]):
		if h, _ := strconv.Atoi(rest[1:3]); h > 23 {
			return false
		}
		if m, _ := strconv.Atoi(rest[4:6]); m > 59 {
			return false
		}
	default:
		return false
	}
	// time.Parse checks the date (month lengths, leap years) and that the
	// clock fields are in range; a second of 60 fails here and goes on.
	_, err := time.Parse("2006-01-02T15:04:05", s[:19])
	return err == nil
}
