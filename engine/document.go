package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuhost/gpuhost/facts"
)

// NewDocument prepares collected facts for evaluation.
func NewDocument(f *facts.Facts) (*Document, []byte, error) {
	data, err := json.Marshal(f)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding facts: %w", err)
	}
	doc, err := ParseDocument(data, "collected facts")
	return doc, data, err
}

// ParseDocument parses a saved gpuhost.facts/v1 document. name is used in
// errors. Only the fields the engine itself needs are checked here; callers
// that accept documents from outside validate them against the schema first.
func ParseDocument(data []byte, name string) (*Document, error) {
	v, err := ast.ValueFromReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parsing facts %s: %w", name, err)
	}
	return documentOf(v, name)
}

// DocumentFromValue prepares a document that was already decoded (objects
// as map[string]any, numbers as json.Number), as facts.DecodeJSON returns it
// after schema validation. The conversion to OPA's input waits until a check
// needs it (see Document.Input); decoded must not change afterwards.
func DocumentFromValue(decoded any, name string) (*Document, error) {
	obj, ok := decoded.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("parsing facts %s: top level is %T, want an object", name, decoded)
	}
	if s, _ := obj["schema"].(string); s != facts.Schema {
		return nil, fmt.Errorf("parsing facts %s: schema is %q, want %q", name, s, facts.Schema)
	}
	doc := &Document{decoded: decoded, name: name, Collectors: map[string]facts.CollectorStatus{}}
	target, ok := obj["target"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("parsing facts %s: target is missing", name)
	}
	if doc.Kind, ok = target["kind"].(string); !ok || doc.Kind == "" {
		return nil, fmt.Errorf("parsing facts %s: target.kind is missing", name)
	}
	ct, found := obj["collectors"]
	if !found {
		return nil, fmt.Errorf("parsing facts %s: collectors is missing", name)
	}
	cols, ok := ct.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("parsing facts %s: collectors is %T, want an object", name, ct)
	}
	for key, v := range cols {
		o, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("parsing facts %s: collectors.%s is not an object", name, key)
		}
		st, _ := o["status"].(string)
		reason, _ := o["reason"].(string)
		if err := checkStatus(name, key, st); err != nil {
			return nil, err
		}
		doc.Collectors[key] = facts.CollectorStatus{Status: st, Reason: reason}
	}
	nj, _ := obj["not_judged"].([]any)
	for _, v := range nj {
		o, _ := v.(map[string]any)
		c, ok1 := o["collector"].(string)
		w, ok2 := o["what"].(string)
		if ok1 && ok2 {
			doc.NotJudged = append(doc.NotJudged, facts.NotJudged{Collector: c, What: w})
		}
	}
	if v, _ := obj["vulnerabilities"].(map[string]any); v != nil {
		if demo, _ := v["db_demo"].(bool); demo {
			doc.Caveats = append(doc.Caveats, CaveatDemoDB)
		}
	}
	return doc, nil
}

func checkStatus(name, collector, st string) error {
	switch st {
	case facts.StatusOK, facts.StatusUnavailable, facts.StatusNotApplicable, facts.StatusError:
		return nil
	}
	return fmt.Errorf("parsing facts %s: collectors.%s.status is %q", name, collector, st)
}

func documentOf(v ast.Value, name string) (*Document, error) {
	obj, ok := v.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("parsing facts %s: top level is %s, want an object", name, ast.ValueName(v))
	}
	if s, _ := stringAt(obj, "schema"); s != facts.Schema {
		return nil, fmt.Errorf("parsing facts %s: schema is %q, want %q", name, s, facts.Schema)
	}
	doc := &Document{Value: v, Collectors: map[string]facts.CollectorStatus{}}
	tt := obj.Get(ast.InternedTerm("target"))
	if tt == nil {
		return nil, fmt.Errorf("parsing facts %s: target is missing", name)
	}
	target, ok := tt.Value.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("parsing facts %s: target is missing", name)
	}
	if doc.Kind, ok = stringAt(target, "kind"); !ok || doc.Kind == "" {
		return nil, fmt.Errorf("parsing facts %s: target.kind is missing", name)
	}
	ct := obj.Get(ast.InternedTerm("collectors"))
	if ct == nil {
		return nil, fmt.Errorf("parsing facts %s: collectors is missing", name)
	}
	cols, ok := ct.Value.(ast.Object)
	if !ok {
		return nil, fmt.Errorf("parsing facts %s: collectors is %s, want an object", name, ast.ValueName(ct.Value))
	}
	var bad error
	cols.Foreach(func(k, v *ast.Term) {
		key, ok1 := k.Value.(ast.String)
		o, ok2 := v.Value.(ast.Object)
		if !ok1 || !ok2 {
			bad = fmt.Errorf("parsing facts %s: collectors.%v is not an object", name, k)
			return
		}
		st, _ := stringAt(o, "status")
		reason, _ := stringAt(o, "reason")
		if err := checkStatus(name, string(key), st); err != nil {
			bad = err
		}
		doc.Collectors[string(key)] = facts.CollectorStatus{Status: st, Reason: reason}
	})
	if bad != nil {
		return nil, bad
	}
	if t := obj.Get(ast.InternedTerm("not_judged")); t != nil {
		if list, ok := t.Value.(*ast.Array); ok {
			list.Foreach(func(e *ast.Term) {
				o, _ := e.Value.(ast.Object)
				if o == nil {
					return
				}
				c, ok1 := stringAt(o, "collector")
				w, ok2 := stringAt(o, "what")
				if ok1 && ok2 {
					doc.NotJudged = append(doc.NotJudged, facts.NotJudged{Collector: c, What: w})
				}
			})
		}
	}
	if t := obj.Get(ast.InternedTerm("vulnerabilities")); t != nil {
		if v, ok := t.Value.(ast.Object); ok {
			if d := v.Get(ast.InternedTerm("db_demo")); d != nil && d.Value.Compare(ast.Boolean(true)) == 0 {
				doc.Caveats = append(doc.Caveats, CaveatDemoDB)
			}
		}
	}
	return doc, nil
}

// CaveatDemoDB is the caveat of a document whose vulnerabilities were
// matched against a demo DB (vulnerabilities.db_demo): a handful of sample
// advisories, so that no CVE found proves nothing.
const CaveatDemoDB = "demo vulnerability DB: not for release gating (the CVE checks matched a handful of sample advisories)"

func stringAt(obj ast.Object, key string) (string, bool) {
	t := obj.Get(ast.InternedTerm(key))
	if t == nil {
		return "", false
	}
	s, ok := t.Value.(ast.String)
	return string(s), ok
}

// TargetString returns a string field of the document's target object.
func (d *Document) TargetString(key string) (string, bool) {
	if d.decoded != nil {
		// decoded never changes, while Value may be being filled in.
		target, _ := d.decoded.(map[string]any)["target"].(map[string]any)
		s, ok := target[key].(string)
		return s, ok
	}
	obj, ok := d.Value.(ast.Object)
	if !ok {
		return "", false
	}
	t := obj.Get(ast.InternedTerm("target"))
	if t == nil {
		return "", false
	}
	target, ok := t.Value.(ast.Object)
	if !ok {
		return "", false
	}
	return stringAt(target, key)
}

// Document is a facts document ready for evaluation.
type Document struct {
	// Value is the whole document, as OPA's input. A document made by
	// DocumentFromValue leaves it nil until Input is called: when every
	// check is answered from the memo, the conversion is never needed.
	Value ast.Value
	// Kind is target.kind, which decides which checks apply.
	Kind string
	// Collectors is the collectors' outcomes, which decide skips and errors.
	Collectors map[string]facts.CollectorStatus
	// NotJudged is what the collectors found and no check judges, which a
	// report's coverage lists. Entries that are not a collector and a
	// text are left out: a document from outside is checked against the
	// schema first.
	NotJudged []facts.NotJudged
	// Caveats qualify every verdict judged from the document, whatever the
	// checks say: a report carries them in its header.
	Caveats []string

	// decoded is the JSON Value is converted from, when it came decoded.
	decoded any
	name    string
	once    sync.Once
	convErr error
}

// Input returns the document as OPA's input, converting it on first use.
func (d *Document) Input() (ast.Value, error) { return d.InputWith(ast.InterfaceToValue) }

// InputWith is Input with the conversion from decoded JSON given: a wrapper
// that converts members hosts share once for the fleet passes its own. The
// first call converts; later ones return its result whatever they pass.
func (d *Document) InputWith(convert func(decoded any) (ast.Value, error)) (ast.Value, error) {
	d.once.Do(func() {
		if d.Value != nil {
			return
		}
		v, err := convert(d.decoded)
		if err != nil {
			d.convErr = fmt.Errorf("converting facts %s: %w", d.name, err)
			return
		}
		d.Value = v
	})
	return d.Value, d.convErr
}

// Decoded returns the decoded JSON a document made by DocumentFromValue was
// made from, or nil. It must not be changed.
func (d *Document) Decoded() any { return d.decoded }

// Name is the name the document's errors use.
func (d *Document) Name() string { return d.name }
