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
	// Imports let a module write params.KEY for data.gpuhost.params.KEY.
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
	resolve := func(v ast.Value) (ast.Ref, bool) {
		ref, ok := v.(ast.Ref)
		if !ok || len(ref) == 0 {
			return nil, false
		}
		if head, ok := ref[0].Value.(ast.Var); ok {
			if path, ok := imports[head]; ok {
				return path.Concat(ref[1:]), true
			}
		}
		return ref, true
	}

	// object.get(data.gpuhost.params, KEY, default) names its key in the
	// second argument; the params term it consumes is not a whole read.
	consumed := map[*ast.Term]bool{}
	objectGet := func(op *ast.Term, args []*ast.Term) {
		if !op.Equal(ast.RefTerm(ast.VarTerm("object"), ast.StringTerm("get"))) || len(args) < 2 {
			return
		}
		if r, ok := resolve(args[0].Value); !ok || !r.Equal(paramsRef) {
			return
		}
		consumed[args[0]] = true
		switch k := args[1].Value.(type) {
		case ast.String:
			keys[string(k)] = true
		case *ast.Array:
			if k.Len() > 0 {
				if first, ok := k.Elem(0).Value.(ast.String); ok {
					keys[string(first)] = true
					return
				}
			}
			keys[All] = true
		default:
			keys[All] = true
		}
	}
	// Only rules: the import of data.gpuhost.params itself reads nothing.
	walkTerms := func(f func(*ast.Term) bool) {
		for _, r := range m.Rules {
			ast.WalkTerms(r, f)
		}
	}
	for _, r := range m.Rules {
		ast.WalkExprs(r, func(x *ast.Expr) bool {
			if x.IsCall() {
				terms := x.Terms.([]*ast.Term)
				objectGet(terms[0], terms[1:])
			}
			return false
		})
	}
	walkTerms(func(t *ast.Term) bool {
		if call, ok := t.Value.(ast.Call); ok && len(call) > 0 {
			objectGet(call[0], call[1:])
		}
		return false
	})

	var other []ast.Ref
	walkTerms(func(t *ast.Term) bool {
		ref, ok := resolve(t.Value)
		if !ok || !ref.HasPrefix(ast.DefaultRootRef) {
			return false
		}
		if !ref.HasPrefix(paramsRef) {
			if !ref.HasPrefix(m.Package.Path) {
				other = append(other, ref.ConstantPrefix())
			}
			return false
		}
		if len(ref) == len(paramsRef) {
			if !consumed[t] {
				keys[All] = true
			}
			return false
		}
		if k, ok := ref[len(paramsRef)].Value.(ast.String); ok {
			keys[string(k)] = true
		} else {
			keys[All] = true
		}
		return false
	})
	return other
}
