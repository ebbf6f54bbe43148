package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/gpuhost/gpuhost/reports"
)

// Outcome is what one check's rules said about one document: its deny, skip
// and error sets, sorted. Found holds the deny and error messages that came
// as objects with a subject, in the order of Errs then Deny.
type Outcome struct {
	Deny, Skip, Errs []string
	Found            []reports.Finding
}

// Decide turns a check's sets into its status. A check that says it could
// not decide (its error set: facts it needs were not to be had for part of
// the target) is an error even where it also denies, since what it could
// not see may be worse; its failures stay in the messages after the errors.
func (e *Engine) Decide(r *reports.Result, o Outcome) {
	switch {
	case len(o.Skip) > 0:
		r.Status, r.Messages = reports.StatusSkip, o.Skip
	case len(o.Errs) > 0:
		r.Status, r.Messages, r.Findings = reports.StatusError, append(slices.Clone(o.Errs), o.Deny...), o.Found
	case len(o.Deny) > 0:
		r.Status, r.Messages, r.Findings = reports.StatusFail, o.Deny, o.Found
	default:
		r.Status = reports.StatusPass
	}
}

// evalSets evaluates a combined query of n checks and returns each
// check's deny, skip and error messages, sorted.
func (e *Engine) evalSets(ctx context.Context, q *rego.PreparedEvalQuery, input ast.Value, n int, hook EvalHook) ([]Outcome, error) {
	opts := []rego.EvalOption{rego.EvalParsedInput(input)}
	if hook != nil {
		extra, done := hook()
		defer done()
		opts = append(opts, extra...)
	}
	rs, err := q.Eval(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return bindingSets(rs, n)
}

// bindingSets unpacks the combined query's binding, left as AST by
// asTerm: a list holding each check's deny set, then its skip set, then its
// error set.
// setsPerCheck is how many sets combinedQuery binds for each check.
const setsPerCheck = 3

func bindingSets(rs rego.ResultSet, n int) ([]Outcome, error) {
	if len(rs) != 1 {
		return nil, fmt.Errorf("query returned %d results, want 1", len(rs))
	}
	t, _ := rs[0].Bindings["x"].(*ast.Term)
	var list *ast.Array
	if t != nil {
		list, _ = t.Value.(*ast.Array)
	}
	if list == nil || list.Len() != setsPerCheck*n {
		return nil, fmt.Errorf("query returned %v, want a list of %d", rs[0].Bindings["x"], setsPerCheck*n)
	}
	out := make([]Outcome, n)
	for k := range setsPerCheck * n {
		set, ok := list.Elem(k).Value.(ast.Set)
		if !ok {
			return nil, fmt.Errorf("check %d: deny/skip/error is %v, want a set", k/setsPerCheck, list.Elem(k))
		}
		msgs := make([]string, 0, set.Len())
		var found []reports.Finding
		for _, m := range set.Slice() {
			if s, ok := m.Value.(ast.String); ok {
				msgs = append(msgs, string(s))
				continue
			}
			if f, ok := findingOf(m.Value); ok {
				msgs = append(msgs, f.Message)
				if f.Located() {
					found = append(found, f)
				}
				continue
			}
			v, err := ast.JSON(m.Value)
			if err != nil {
				return nil, fmt.Errorf("check %d: message %v: %w", k/setsPerCheck, m, err)
			}
			b, _ := json.Marshal(v)
			msgs = append(msgs, string(b))
		}
		sort.Strings(msgs)
		slices.SortFunc(found, func(a, b reports.Finding) int { return strings.Compare(a.Message, b.Message) })
		o := &out[k/setsPerCheck]
		switch k % setsPerCheck {
		case 0:
			o.Deny = msgs
			o.Found = append(o.Found, found...)
		case 1:
			o.Skip = msgs
		default:
			o.Errs = msgs
			o.Found = append(found, o.Found...)
		}
	}
	return out, nil
}

// findingOf reads a message given as an object: msg is its text, and file,
// line and subject, each optional, say what it is about. An object without
// a string msg is not a finding (it is shown as JSON), nor is one whose
// fields have the wrong types: a policy's mistake must not lose its text.
func findingOf(v ast.Value) (reports.Finding, bool) {
	obj, ok := v.(ast.Object)
	if !ok {
		return reports.Finding{}, false
	}
	var f reports.Finding
	valid := true
	obj.Foreach(func(key, val *ast.Term) {
		k, ok := key.Value.(ast.String)
		if !ok {
			valid = false
			return
		}
		switch k {
		case "msg":
			s, ok := val.Value.(ast.String)
			f.Message, valid = string(s), valid && ok
		case "file":
			s, ok := val.Value.(ast.String)
			f.File, valid = string(s), valid && ok
		case "subject":
			s, ok := val.Value.(ast.String)
			f.Subject, valid = string(s), valid && ok
		case "line":
			n, ok := val.Value.(ast.Number)
			line, isInt := n.Int()
			f.Line, valid = line, valid && ok && isInt && line >= 0
		default:
			valid = false
		}
	})
	if !valid || f.Message == "" {
		return reports.Finding{}, false
	}
	return f, true
}

// asTerm leaves a query's results as OPA computed them: converting them to
// Go values only for bindingSets to read them back cost more per host than
// several checks.
func asTerm(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil }
