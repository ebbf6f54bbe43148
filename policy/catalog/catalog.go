// Package catalog is a policy pack as a document for security review:
// every check with its metadata, the collectors and parameters it relies on,
// and a matrix of compliance controls against checks. render/catalog
// renders it (`gpuhost policy doc`); docs/policies.md is the default pack's.
// Everything in it but the parameter values is text from the pack, which a
// third-party bundle may have written: renderers escape it all.
package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/policy/params"
)

// Entry is one check and the parameters it reads.
type Entry struct {
	engine.Check
	// Params are the data.gpuhost.params keys the check reads, sorted;
	// params.All when it reads them with a key known only at run time.
	Params []string
}

// Catalog is a pack ready to render.
type Catalog struct {
	Entries []Entry
	// Params are the effective parameter values: the pack's defaults with
	// any user params overlaid.
	Params map[string]any
}

// New builds the catalog of an engine's pack, sorted by check id.
func New(e *engine.Engine) *Catalog {
	c := &Catalog{Params: e.Params()}
	for _, ch := range e.Checks() {
		c.Entries = append(c.Entries, Entry{Check: ch, Params: params.Used(e, ch)})
	}
	slices.SortFunc(c.Entries, func(a, b Entry) int { return strings.Compare(a.ID, b.ID) })
	return c
}

// Problems lists what a reviewer cannot accept in a check: no id, no valid
// severity, no remediation, or no compliance control. Empty means none.
func (c *Catalog) Problems() []string {
	var out []string
	for _, e := range c.Entries {
		name := e.ID
		if name == "" {
			name = e.File
		}
		if e.ID == "" {
			out = append(out, name+": no id")
		}
		if e.Severity == "" {
			out = append(out, name+": no severity")
		}
		if strings.TrimSpace(e.Remediation) == "" {
			out = append(out, name+": no remediation")
		}
		n := 0
		for _, ids := range e.Controls {
			n += len(ids)
		}
		if n == 0 {
			out = append(out, name+": no compliance control")
		}
	}
	return out
}

// frameworks lists the frameworks any check maps to, sorted.
func (c *Catalog) frameworks() []string {
	set := map[string]bool{}
	for _, e := range c.Entries {
		for fw, ids := range e.Controls {
			if len(ids) > 0 {
				set[fw] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for fw := range set {
		out = append(out, fw)
	}
	slices.Sort(out)
	return out
}

// Matrix is one framework's controls (rows) against the checks that map to
// any of them (columns).
type Matrix struct {
	Framework string
	Controls  []string
	Checks    []string
	// Marks[i][j] is whether Checks[j] covers Controls[i].
	Marks [][]bool
}

// Matrices are the control matrices, one per framework, frameworks sorted
// and controls in natural order.
func (c *Catalog) Matrices() []Matrix {
	var out []Matrix
	for _, fw := range c.frameworks() {
		m := Matrix{Framework: fw}
		covers := map[string]map[string]bool{}
		for _, e := range c.Entries {
			if len(e.Controls[fw]) == 0 {
				continue
			}
			m.Checks = append(m.Checks, e.ID)
			for _, ctl := range e.Controls[fw] {
				if covers[ctl] == nil {
					covers[ctl] = map[string]bool{}
					m.Controls = append(m.Controls, ctl)
				}
				covers[ctl][e.ID] = true
			}
		}
		slices.SortFunc(m.Controls, naturalCompare)
		for _, ctl := range m.Controls {
			row := make([]bool, len(m.Checks))
			for j, id := range m.Checks {
				row[j] = covers[ctl][id]
			}
			m.Marks = append(m.Marks, row)
		}
		out = append(out, m)
	}
	return out
}

// naturalCompare orders control ids as people read them: SC-8 before SC-13,
// CM-7 before CM-7(1), 1.2.10 after 1.2.9.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		ca, ra := chunk(a)
		cb, rb := chunk(b)
		na, errA := strconv.Atoi(ca)
		nb, errB := strconv.Atoi(cb)
		switch {
		case errA == nil && errB == nil && na != nb:
			return na - nb
		case errA != nil || errB != nil:
			if c := strings.Compare(ca, cb); c != 0 {
				return c
			}
		}
		a, b = ra, rb
	}
	return len(a) - len(b)
}

// chunk splits off a leading run of digits, or of non-digits.
func chunk(s string) (string, string) {
	digit := unicode.IsDigit(rune(s[0]))
	i := 1
	for i < len(s) && unicode.IsDigit(rune(s[i])) == digit {
		i++
	}
	return s[:i], s[i:]
}

// Param is one parameter: its effective value and the checks that read it.
type Param struct {
	Name string
	// Value is the value as compact JSON, or "(not set)" for a parameter
	// a check reads that has none.
	Value string
	// Readers are the checks that read it by name, then those that read
	// parameters by a key known only at run time.
	Readers []string
}

// ParamTable lists every parameter that has a value or a reader, sorted by
// name.
func (c *Catalog) ParamTable() []Param {
	users := c.paramUsers()
	var out []Param
	for _, p := range c.paramNames() {
		v, ok := c.Params[p]
		out = append(out, Param{Name: p, Value: value(v, ok),
			Readers: append(append([]string{}, users[p]...), users[params.All]...)})
	}
	return out
}

// paramUsers maps each parameter to the checks that read it.
func (c *Catalog) paramUsers() map[string][]string {
	users := map[string][]string{}
	for _, e := range c.Entries {
		for _, p := range e.Params {
			users[p] = append(users[p], e.ID)
		}
	}
	return users
}

// paramNames lists every parameter that has a value or a reader, sorted.
func (c *Catalog) paramNames() []string {
	set := map[string]bool{}
	for k := range c.Params {
		set[k] = true
	}
	for k := range c.paramUsers() {
		if k != params.All {
			set[k] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// value is a parameter's value as compact JSON; encoding/json sorts map
// keys, so the text is stable.
func value(v any, ok bool) string {
	if !ok {
		return "(not set)"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// The renderers escape for their format; \u003c would only confuse a reader.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// ControlList is "fw: id, id; fw: id", frameworks sorted and ids in natural
// order; empty when the check maps to no control.
func ControlList(controls map[string][]string) string {
	fws := make([]string, 0, len(controls))
	for fw := range controls {
		fws = append(fws, fw)
	}
	slices.Sort(fws)
	parts := make([]string, 0, len(fws))
	for _, fw := range fws {
		ids := slices.Clone(controls[fw])
		slices.SortFunc(ids, naturalCompare)
		parts = append(parts, fw+": "+strings.Join(ids, ", "))
	}
	return strings.Join(parts, "; ")
}
