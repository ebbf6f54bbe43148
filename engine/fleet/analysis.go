package fleet

import (
	"maps"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
)

// ruleAnalysis is the state of analysing one compiled rule. The compiler
// has rewritten it into single steps over unique locals:
//
//	__local1__ = input.gpu.devices[__local2__]   (some d in input.gpu.devices)
//	__local3__ = __local1__.uuid                 (a ref hoisted out of a call)
//	object.get(__local4__, "k", [], __local5__)  (a call's output is its last operand)
//	sprintf("...", [__local3__], __local6__)
//	__local7__ = __local6__                      (msg := sprintf(...))
//
// A local's first occurrence binds it, so a local first seen as one side of
// an equality with an input ref is that part of input.
type ruleAnalysis struct {
	items []readItem
	ok    bool
	// origin is the input path a local stands for.
	origin map[ast.Var][]step
	// uses counts each local's occurrences in the whole rule.
	uses map[ast.Var]int
	// message holds the locals whose only use is the text of the rule's
	// output message.
	message map[ast.Var]bool
	// role says how each expression binding a local or writing the message
	// reads input, and local names the local it binds.
	role  map[*ast.Expr]exprRole
	local map[*ast.Expr]ast.Var
}

type exprRole uint8

const (
	roleUse      exprRole = iota
	roleDefRef            // local = input ref: reads the path's presence
	roleDefAlias          // local = local
	roleDefGet            // object.get(base, "k", ground default, local)
	roleMessage           // sprintf whose output is the message
)

func analyzeRule(r *ast.Rule, output bool) ([]readItem, bool) {
	a := &ruleAnalysis{ok: true, origin: map[ast.Var][]step{}, uses: map[ast.Var]int{}, message: map[ast.Var]bool{},
		role: map[*ast.Expr]exprRole{}, local: map[*ast.Expr]ast.Var{}}
	ast.WalkVars(r, func(v ast.Var) bool {
		a.uses[v]++
		return false
	})
	a.refuseUnfollowable(r)
	if !a.ok {
		return nil, false
	}
	bound := map[ast.Var]bool{}
	for _, t := range r.Head.Args {
		ast.WalkVars(t, func(v ast.Var) bool { bound[v] = true; return false })
	}
	a.bindLocals(r.Body, bound)
	if output {
		a.findMessage(r)
	}
	for _, x := range r.Body {
		a.readExpr(x)
	}
	if !(output && a.isMessageHead(r)) {
		a.valueWalkTerm(r.Head.Key)
	}
	a.valueWalkTerm(r.Head.Value)
	// live[f.path] contains f.sha256: the path is in the rule's ref.
	for _, t := range r.Head.Reference[1:] {
		a.valueWalkTerm(t)
	}
	for _, t := range r.Head.Args {
		a.valueWalkTerm(t)
	}
	return a.items, a.ok
}

// refuseUnfollowable marks the rule unanalysable when it replaces input with
// `with` or calls a builtin whose answer changes from call to call.
func (a *ruleAnalysis) refuseUnfollowable(r *ast.Rule) {
	nondeterministic := func(op string) bool {
		b, found := ast.BuiltinMap[op]
		return found && b.Nondeterministic
	}
	ast.WalkExprs(r, func(x *ast.Expr) bool {
		for _, w := range x.With {
			if isInputRooted(w.Target) {
				a.ok = false
			}
		}
		if x.IsCall() && nondeterministic(x.Operator().String()) {
			a.ok = false
		}
		return !a.ok
	})
	ast.WalkTerms(r, func(t *ast.Term) bool {
		if c, isCall := t.Value.(ast.Call); isCall && len(c) > 0 && nondeterministic(c[0].String()) {
			a.ok = false
		}
		return !a.ok
	})
}

// bindLocals finds, in body order, each local bound to a part of input,
// in body and in the comprehensions and every bodies within it. bound holds
// the locals bound before body runs.
func (a *ruleAnalysis) bindLocals(body ast.Body, bound map[ast.Var]bool) {
	unbound := func(t *ast.Term) (ast.Var, bool) {
		v, isVar := t.Value.(ast.Var)
		return v, isVar && !bound[v] && !v.Equal(ast.InputRootDocument.Value)
	}
	for _, x := range body {
		if !x.Negated && len(x.With) == 0 {
			switch {
			case x.IsEquality():
				lhs, rhs := x.Operand(0), x.Operand(1)
				for range 2 {
					if w, ok := unbound(lhs); ok {
						if v, isVar := rhs.Value.(ast.Var); isVar && a.origin[v] != nil {
							a.origin[w], a.role[x], a.local[x] = a.origin[v], roleDefAlias, w
							break
						}
						if p, whole := a.refOrigin(rhs, true); whole {
							a.origin[w], a.role[x], a.local[x] = p, roleDefRef, w
							break
						}
					}
					lhs, rhs = rhs, lhs
				}
			case x.IsCall() && x.Operator().Equal(ast.ObjectGet.Ref()) && len(x.Operands()) == 4:
				args := x.Operands()
				base, whole := a.refOrigin(args[0], false)
				key, static := staticKey(args[1])
				out, free := unbound(args[3])
				if whole && static && free && args[2].IsGround() {
					for _, k := range key {
						base = append(base, step{key: k})
					}
					a.origin[out], a.role[x], a.local[x] = base, roleDefGet, out
				}
			}
		}
		// A closure inside x sees what was bound before x.
		ast.WalkClosures(x, func(c any) bool {
			inner := maps.Clone(bound)
			switch c := c.(type) {
			case *ast.ArrayComprehension:
				a.bindLocals(c.Body, inner)
			case *ast.SetComprehension:
				a.bindLocals(c.Body, inner)
			case *ast.ObjectComprehension:
				a.bindLocals(c.Body, inner)
			case *ast.Every:
				a.bindLocals(c.Body, inner)
			}
			return true
		})
		ast.WalkVars(x, func(v ast.Var) bool { bound[v] = true; return false })
	}
}

// refOrigin returns the input path t stands for: input itself, a local bound
// to input, or a ref from either through constant keys and, when each is
// set, locals used nowhere else (some d in xs: every member in turn).
func (a *ruleAnalysis) refOrigin(t *ast.Term, each bool) ([]step, bool) {
	switch v := t.Value.(type) {
	case ast.Var:
		if v.Equal(ast.InputRootDocument.Value) {
			return []step{}, true
		}
		p, found := a.origin[v]
		return slices.Clone(p), found
	case ast.Ref:
		p, rest, rooted := a.refPrefix(v, each)
		return p, rooted && rest == len(v)
	}
	return nil, false
}

// refPrefix returns the input path a ref reads up to its first segment the
// path cannot name, and that segment's index.
func (a *ruleAnalysis) refPrefix(ref ast.Ref, each bool) ([]step, int, bool) {
	if len(ref) == 0 {
		return nil, 0, false
	}
	var p []step
	switch h := ref[0].Value.(type) {
	case ast.Var:
		if h.Equal(ast.InputRootDocument.Value) {
			p = []step{}
		} else if o, found := a.origin[h]; found {
			p = slices.Clone(o)
		} else {
			return nil, 0, false
		}
	default:
		return nil, 0, false
	}
	i := 1
	for ; i < len(ref); i++ {
		switch s := ref[i].Value.(type) {
		case ast.String:
			p = append(p, step{key: string(s)})
			continue
		case ast.Var:
			if each && a.uses[s] == 1 {
				p = append(p, step{each: true})
				continue
			}
		}
		break
	}
	return p, i, true
}

// findMessage marks the locals that carry the text of an output rule's
// message, from the head back through plain copies to the sprintf that
// wrote it. Each must occur exactly twice: where it is bound and where it
// is passed on.
func (a *ruleAnalysis) findMessage(r *ast.Rule) {
	if !a.isMessageCandidate(r) {
		return
	}
	m := r.Head.Key.Value.(ast.Var)
	a.message[m] = true
	for changed := true; changed; {
		changed = false
		for _, x := range r.Body {
			if a.role[x] != roleUse || x.Negated || len(x.With) > 0 {
				continue
			}
			switch {
			case x.IsEquality():
				l, lok := x.Operand(0).Value.(ast.Var)
				if obj := findingObject(x); lok && a.message[l] && obj != nil {
					// A finding object: the text, file, line and subject
					// of one finding are all written out, never tested.
					obj.Foreach(func(_, v *ast.Term) {
						if fv, isVar := v.Value.(ast.Var); isVar && !a.message[fv] && a.uses[fv] == 2 {
							a.message[fv] = true
							changed = true
						}
					})
					continue
				}
				rv, rok := x.Operand(1).Value.(ast.Var)
				if !lok || !rok {
					continue
				}
				for _, pair := range [2][2]ast.Var{{l, rv}, {rv, l}} {
					if a.message[pair[0]] && !a.message[pair[1]] && a.uses[pair[1]] == 2 {
						a.message[pair[1]] = true
						changed = true
					}
				}
			case x.IsCall() && x.Operator().Equal(ast.Sprintf.Ref()) && len(x.Operands()) == 3:
				if out, isVar := x.Operand(2).Value.(ast.Var); isVar && a.message[out] {
					a.role[x] = roleMessage
				}
			}
		}
	}
}

// findingObject is the object of `local = {"msg": ..., "subject": ...}`, the
// form the compiler gives a rule whose head is a finding object, or nil.
// Its keys must be strings.
func findingObject(x *ast.Expr) ast.Object {
	if !x.IsEquality() {
		return nil
	}
	obj, isObj := x.Operand(1).Value.(ast.Object)
	if !isObj {
		return nil
	}
	plain := true
	obj.Foreach(func(k, _ *ast.Term) {
		if _, isStr := k.Value.(ast.String); !isStr {
			plain = false
		}
	})
	if !plain {
		return nil
	}
	return obj
}

func (a *ruleAnalysis) isMessageCandidate(r *ast.Rule) bool {
	v, isVar := r.Head.Key.Value.(ast.Var)
	return isVar && a.uses[v] == 2
}

func (a *ruleAnalysis) isMessageHead(r *ast.Rule) bool {
	v, isVar := r.Head.Key.Value.(ast.Var)
	return isVar && a.message[v]
}

func (a *ruleAnalysis) add(p []step, mode readMode) {
	if len(p) == 0 && mode == readPresence {
		return // input itself is always there
	}
	a.items = append(a.items, readItem{path: p, mode: mode})
}

// readExpr records what x reads, by the role bindLocals and findMessage
// gave it.
func (a *ruleAnalysis) readExpr(x *ast.Expr) {
	bound := a.local[x]
	switch a.role[x] {
	case roleDefRef, roleDefGet, roleDefAlias:
		// Binding fails when the path does not resolve (or, for object.get,
		// when what it looks in is not an object: the digest writes the type
		// of whatever stops a path); what the local then reads is recorded
		// where it is used. A local that is the message itself is printed.
		mode := readPresence
		if a.message[bound] {
			mode = readPrinted
		}
		a.add(slices.Clone(a.origin[bound]), mode)
		return
	case roleMessage:
		a.valueWalk(x.Operand(0))
		args, isArray := x.Operand(1).Value.(*ast.Array)
		if !isArray {
			a.valueWalk(x.Operand(1))
			return
		}
		args.Foreach(func(t *ast.Term) {
			if v, isVar := t.Value.(ast.Var); isVar && a.origin[v] != nil && a.uses[v] == 2 {
				a.add(slices.Clone(a.origin[v]), readPrinted)
				return
			}
			if p, whole := a.refOrigin(t, false); whole {
				a.add(p, readPrinted)
				return
			}
			a.valueWalk(t)
		})
		return
	}
	if x.IsEquality() {
		if l, lok := x.Operand(0).Value.(ast.Var); lok && a.message[l] {
			if r, rok := x.Operand(1).Value.(ast.Var); rok && a.message[r] {
				return
			}
			if obj := findingObject(x); obj != nil {
				obj.Foreach(func(k, v *ast.Term) {
					if fv, isVar := v.Value.(ast.Var); !isVar || !a.message[fv] {
						a.valueWalk(v)
					}
				})
				return
			}
		}
	}
	if x.IsCall() && x.Operator().Equal(ast.Count.Ref()) && len(x.Operands()) == 2 {
		if p, whole := a.refOrigin(x.Operand(0), false); whole {
			a.add(p, readLength)
			a.valueWalk(x.Operand(1))
			return
		}
	}
	switch t := x.Terms.(type) {
	case *ast.Term:
		a.valueWalk(t)
	case []*ast.Term:
		for _, t := range t {
			a.valueWalk(t)
		}
	case *ast.SomeDecl, *ast.Every:
		a.valueWalk(t)
	}
	for _, w := range x.With {
		a.valueWalk(w)
	}
}

// valueWalk records every part of input under t as read whole. A ref is
// read up to the first segment it does not name by a constant; what follows
// is walked in turn.
func (a *ruleAnalysis) valueWalk(node any) {
	if !a.ok {
		return
	}
	var vis *ast.GenericVisitor
	vis = ast.NewGenericVisitor(func(x any) bool {
		switch x := x.(type) {
		case *ast.Expr:
			// An expression inside a comprehension or every: it may bind a
			// local to input like any other.
			a.readExpr(x)
			return true
		case ast.Var:
			if x.Equal(ast.InputRootDocument.Value) {
				a.add([]step{}, readValue)
			} else if p, found := a.origin[x]; found {
				a.add(slices.Clone(p), readValue)
			}
		case ast.Ref:
			p, rest, rooted := a.refPrefix(x, false)
			if !rooted {
				return false
			}
			a.add(p, readValue)
			for _, t := range x[rest:] {
				vis.Walk(t)
			}
			return true
		}
		return false
	})
	vis.Walk(node)
}

func (a *ruleAnalysis) valueWalkTerm(t *ast.Term) {
	if t != nil {
		a.valueWalk(t)
	}
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
