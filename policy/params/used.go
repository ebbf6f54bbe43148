package params

import (
	"slices"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/open-policy-agent/opa/v1/ast"
)

// All stands for "every parameter" in Used: the check reads
// data.gpuhost.params as a whole, or with a key only known at evaluation.
const All = "*"

// paramsRef is data.gpuhost.params.
var paramsRef = ast.MustParseRef("data.gpuhost.params")

// maxParamModules bounds how many modules Used follows from one check.
const maxParamModules = 256

// Used returns the sorted top-level keys of data.gpuhost.params that a
// check reads: data.gpuhost.params.KEY, data.gpuhost.params["KEY"] and
// object.get(data.gpuhost.params, "KEY", default). It follows references
// into other packages of the pack (libraries), whole module by whole module,
// so it may over-approximate but does not miss a key read through a helper.
// A read whose key is not a constant shows as All.
func Used(e *engine.Engine, c engine.Check) []string {
	modules := e.Modules()
	// The parsed modules, not the compiler's: compilation rewrites
	// object.get(data.gpuhost.params, ...) through local variables.
	byPkg := map[string][]*ast.Module{}
	for _, m := range modules {
		byPkg[m.Package.Path.String()] = append(byPkg[m.Package.Path.String()], m)
	}
	start, ok := modules[c.File]
	if !ok {
		return nil
	}
	keys := map[string]bool{}
	seen := map[*ast.Module]bool{start: true}
	queue := []*ast.Module{start}
	for len(queue) > 0 && len(seen) <= maxParamModules {
		m := queue[0]
		queue = queue[1:]
		for _, ref := range paramsIn(m, keys) {
			// A reference into another package pulls in that package's
			// modules; the longest package prefix of the ref is the one.
			for i := len(ref); i > 1; i-- {
				mods, ok := byPkg[ref[:i].String()]
				if !ok {
					continue
				}
				for _, dep := range mods {
					if !seen[dep] && len(seen) < maxParamModules {
						seen[dep] = true
						queue = append(queue, dep)
					}
				}
				break
			}
		}
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// paramsIn adds the parameter keys module m reads to keys, and returns the
// other data references it makes.
func paramsIn(m *ast.Module, keys map[string]bool) []ast.Ref {
	r := &paramReader{m: m, imports: importAliases(m), keys: keys, consumed: map[*ast.Term]bool{}}
	// object.get calls go first: they mark the params terms they consume,
	// which the reference walk must then not count as whole reads.
	r.objectGets()
	return r.refs()
}

// paramReader holds what reading one module's parameter keys shares across
// its two passes: the module's import aliases, the keys found so far, and
// the params terms object.get has already accounted for.
type paramReader struct {
	m        *ast.Module
	imports  map[ast.Var]ast.Ref
	keys     map[string]bool
	consumed map[*ast.Term]bool
}

// importAliases maps each import's alias to the data path it stands for,
// since imports let a module write params.KEY for data.gpuhost.params.KEY.
func importAliases(m *ast.Module) map[ast.Var]ast.Ref {
	imports := map[ast.Var]ast.Ref{}
	for _, imp := range m.Imports {
		path, ok := imp.Path.Value.(ast.Ref)
		if !ok || !path.HasPrefix(ast.DefaultRootRef) || len(path) < 2 {
			continue
		}
		alias := imp.Alias
		if alias == "" {
			last, ok := path[len(path)-1].Value.(ast.String)
			if !ok {
				continue
			}
			alias = ast.Var(last)
		}
		imports[alias] = path
	}
	return imports
}

// resolve spells a reference out in full, through the module's imports, so
// an aliased read is recognised as the data path it is.
func (r *paramReader) resolve(v ast.Value) (ast.Ref, bool) {
	ref, ok := v.(ast.Ref)
	if !ok || len(ref) == 0 {
		return nil, false
	}
	if head, ok := ref[0].Value.(ast.Var); ok {
		if path, ok := r.imports[head]; ok {
			return path.Concat(ref[1:]), true
		}
	}
	return ref, true
}

// walkTerms visits only rules: the import of data.gpuhost.params itself
// reads nothing.
func (r *paramReader) walkTerms(f func(*ast.Term) bool) {
	for _, rule := range r.m.Rules {
		ast.WalkTerms(rule, f)
	}
}

// objectGets finds object.get calls in both spellings the parser gives
// them, a call expression and a call term nested in another.
func (r *paramReader) objectGets() {
	for _, rule := range r.m.Rules {
		ast.WalkExprs(rule, func(x *ast.Expr) bool {
			if x.IsCall() {
				terms := x.Terms.([]*ast.Term)
				r.objectGet(terms[0], terms[1:])
			}
			return false
		})
	}
	r.walkTerms(func(t *ast.Term) bool {
		if call, ok := t.Value.(ast.Call); ok && len(call) > 0 {
			r.objectGet(call[0], call[1:])
		}
		return false
	})
}

// objectGet reads the key of object.get(data.gpuhost.params, KEY, default),
// which names it in the second argument; the params term it consumes is not
// a whole read.
func (r *paramReader) objectGet(op *ast.Term, args []*ast.Term) {
	if !op.Equal(ast.RefTerm(ast.VarTerm("object"), ast.StringTerm("get"))) || len(args) < 2 {
		return
	}
	if ref, ok := r.resolve(args[0].Value); !ok || !ref.Equal(paramsRef) {
		return
	}
	r.consumed[args[0]] = true
	switch k := args[1].Value.(type) {
	case ast.String:
		r.keys[string(k)] = true
	case *ast.Array:
		if k.Len() > 0 {
			if first, ok := k.Elem(0).Value.(ast.String); ok {
				r.keys[string(first)] = true
				return
			}
		}
		r.keys[All] = true
	default:
		r.keys[All] = true
	}
}

// refs reads the keys of direct references into data.gpuhost.params, and
// gathers the module's references to other packages so Used can follow
// them into the libraries they name.
func (r *paramReader) refs() []ast.Ref {
	var other []ast.Ref
	r.walkTerms(func(t *ast.Term) bool {
		ref, ok := r.resolve(t.Value)
		if !ok || !ref.HasPrefix(ast.DefaultRootRef) {
			return false
		}
		if !ref.HasPrefix(paramsRef) {
			if !ref.HasPrefix(r.m.Package.Path) {
				other = append(other, ref.ConstantPrefix())
			}
			return false
		}
		if len(ref) == len(paramsRef) {
			if !r.consumed[t] {
				r.keys[All] = true
			}
			return false
		}
		if k, ok := ref[len(paramsRef)].Value.(ast.String); ok {
			r.keys[string(k)] = true
		} else {
			r.keys[All] = true
		}
		return false
	})
	return other
}
