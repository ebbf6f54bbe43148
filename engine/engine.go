// Package engine is gpuhost's one policy evaluator. It compiles a policy pack
// once, prepares one query that evaluates every check, and turns a facts
// document into results. The CLI, the Packer gate and the agent all share it.
package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/reports"
)

// Engine evaluates a compiled policy pack. It is safe for concurrent use.
type Engine struct {
	checks []Check
	// single holds each check's own query, prepared only when a combined
	// query fails and the checks are evaluated one by one to find the one
	// at fault: almost never, so not at New.
	single  []singleQuery
	prepare func(query string) (rego.PreparedEvalQuery, error)
	// combined caches one *Query per set of runnable checks, keyed
	// by their indices. Checks the gate skips are left out of the query, so
	// a rootfs never pays for the live GPU checks, nor a host without a
	// GPU for the device checks.
	combined   sync.Map
	nCombined  atomic.Int64
	maxQueries int64
	digest     string
	params     map[string]any
	modules    map[string]*ast.Module
	compiler   *ast.Compiler
	profiles   map[string][]byte
}

type options struct {
	sources    []*Source
	params     map[string]any
	maxQueries int
}

// Option configures New.
type Option func(*options)

// WithSource adds a policy pack. Several packs are compiled together.
func WithSource(s *Source) Option { return func(o *options) { o.sources = append(o.sources, s) } }

// WithMaxQueries bounds the prepared queries the engine keeps, one per set
// of checks evaluated together (default 256). Past it a set's query is
// prepared for the one evaluation and dropped.
func WithMaxQueries(n int) Option { return func(o *options) { o.maxQueries = n } }

// WithParams sets user parameters, overlaid on the packs' defaults.
func WithParams(p map[string]any) Option { return func(o *options) { o.params = p } }

// CompileError is a policy that does not parse or compile. Its message names
// the file and line.
type CompileError struct{ Err error }

func (e *CompileError) Error() string { return "compiling policies: " + e.Err.Error() }
func (e *CompileError) Unwrap() error { return e.Err }

// New compiles the packs and prepares their queries.
func New(ctx context.Context, opts ...Option) (*Engine, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if len(o.sources) == 0 {
		return nil, errors.New("no policy pack given")
	}
	modules, raw, defaults, err := parseSources(o.sources)
	if err != nil {
		return nil, err
	}
	profiles := map[string][]byte{}
	for _, src := range o.sources {
		for name, data := range src.Profiles {
			// A later pack's profile of the same name replaces the
			// earlier one, as its params do.
			profiles[name] = data
			key := "compliance/" + name + "/profile.yaml"
			if len(o.sources) > 1 {
				key = src.Name + ":" + key
			}
			raw[key] = data
		}
	}
	params := mergeParams(append(defaults, o.params)...)

	compiler := ast.NewCompiler().WithStrict(false)
	compiler.Compile(modules)
	if compiler.Failed() {
		return nil, &CompileError{Err: compiler.Errors}
	}

	checks, err := extractChecks(modules)
	if err != nil {
		return nil, err
	}
	if err := paramSeverities(checks, params); err != nil {
		return nil, err
	}
	// This is the plain path, a single scan and so the Packer gate: OPA as
	// it comes. The fleet speed-ups wrap an Engine (engine/fleet).
	e := &Engine{checks: checks, params: params, modules: modules, compiler: compiler, maxQueries: maxCombined, profiles: profiles}
	if o.maxQueries > 0 {
		e.maxQueries = int64(o.maxQueries)
	}
	e.digest = digestOf(raw, params)
	e.prepareQueries(ctx)
	return e, nil
}

// parseSources parses every pack's non-test modules, keeping each one's
// raw bytes for the digest and each pack's default params. With more than
// one pack a module's key is prefixed by its pack's name, so two packs may
// each have a file of the same name.
func parseSources(sources []*Source) (modules map[string]*ast.Module, raw map[string][]byte, defaults []map[string]any, err error) {
	modules = map[string]*ast.Module{}
	raw = map[string][]byte{}
	for _, src := range sources {
		for _, name := range sortedKeys(src.Modules) {
			if strings.HasSuffix(name, "_test.rego") {
				continue
			}
			key := name
			if len(sources) > 1 {
				key = src.Name + ":" + name
			}
			m, err := ast.ParseModuleWithOpts(key, string(src.Modules[name]), ast.ParserOptions{
				ProcessAnnotation: true,
				RegoVersion:       ast.RegoV1,
			})
			if err != nil {
				return nil, nil, nil, &CompileError{Err: err}
			}
			modules[key] = m
			raw[key] = src.Modules[name]
		}
		if src.Params != nil {
			defaults = append(defaults, src.Params)
		}
	}
	return modules, raw, defaults, nil
}

// prepareQueries sets up how the engine prepares its queries. Nothing is
// prepared here: the combined query of the checks a document runs is
// prepared on its first use (Query), and a check's own query only when a
// combined query fails (EvaluateQuery). The compiler has already held
// every module to OPA's rules, so preparing a query over them cannot
// fail on a policy's account.
func (e *Engine) prepareQueries(ctx context.Context) {
	// Params are read as AST values: converting them from Go maps on every
	// read cost more than evaluating most checks.
	store := inmem.NewFromObjectWithOpts(map[string]any{"gpuhost": map[string]any{"params": e.params}},
		inmem.OptReturnASTValuesOnRead(true))
	// Queries are prepared long after New returns, for whichever scan
	// needs one first; New's cancellation is not theirs.
	ctx = context.WithoutCancel(ctx)
	e.prepare = func(query string) (rego.PreparedEvalQuery, error) {
		return rego.New(
			rego.Query(query),
			rego.Compiler(e.compiler),
			rego.Store(store),
			rego.StoreReadAST(true),
			rego.StrictBuiltinErrors(true),
			rego.GenerateJSON(asTerm),
		).PrepareForEval(ctx)
	}
	e.single = make([]singleQuery, len(e.checks))
}

// singleQuery is one check's own query, prepared once on first use.
type singleQuery struct {
	once  sync.Once
	query rego.PreparedEvalQuery
	err   error
}

// singleQuery returns check i's own query.
func (e *Engine) singleQuery(i int) (*rego.PreparedEvalQuery, error) {
	s := &e.single[i]
	s.once.Do(func() {
		s.query, s.err = e.prepare(combinedQuery([]Check{e.checks[i]}))
	})
	return &s.query, s.err
}

// combinedQuery builds one query whose single binding holds every check's
// deny, skip and error sets, in that order, so a document costs one
// evaluation, not one per check.
func combinedQuery(checks []Check) string {
	var b strings.Builder
	b.WriteString("x := [")
	for i, c := range checks {
		if i > 0 {
			b.WriteString(", ")
		}
		skip := "set()"
		if c.hasSkip {
			skip = "data." + c.Package + ".skip"
		}
		errs := "set()"
		if c.hasError {
			errs = "data." + c.Package + ".error"
		}
		fmt.Fprintf(&b, "data.%s.deny, %s, %s", c.Package, skip, errs)
	}
	b.WriteString("]")
	return b.String()
}

// digestOf hashes the compiled policy text and the effective parameters, so a
// report says exactly which policy decided it.
func digestOf(raw map[string][]byte, params map[string]any) string {
	h := sha256.New()
	for _, k := range sortedKeys(raw) {
		fmt.Fprintf(h, "%s\x00%d\x00", k, len(raw[k]))
		h.Write(raw[k])
	}
	p, _ := json.Marshal(params) // map keys are sorted by encoding/json
	h.Write(p)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Checks returns the pack's checks, sorted by id.
func (e *Engine) Checks() []Check { return slices.Clone(e.checks) }

// Digest identifies the compiled pack and its parameters.
func (e *Engine) Digest() string { return e.digest }

// Profiles returns the compliance profiles of the packs, each file's bytes
// by profile name (package policy/compliance reads them).
func (e *Engine) Profiles() map[string][]byte { return e.profiles }

// Params returns the effective parameters.
func (e *Engine) Params() map[string]any { return e.params }

// Evaluate runs every check against doc. It returns an error only when the
// evaluation as a whole could not run; a check that errors on its own is
// reported as a result with status error.
func (e *Engine) Evaluate(ctx context.Context, doc *Document) ([]reports.Result, error) {
	out, run := e.Applicable(doc)
	if len(run) == 0 {
		return out, nil
	}
	q, err := e.Query(run)
	if err != nil {
		return nil, err
	}
	input, err := doc.Input()
	if err != nil {
		return nil, err
	}
	return out, e.EvaluateQuery(ctx, q, input, out, run, nil, nil)
}

// Applicable returns every check's result as far as it is known before
// evaluation (not applicable to this kind of target, or gated out by its
// collectors), and the indices of the checks left to evaluate. Evaluate
// starts with it; so does a wrapper that answers some checks itself.
func (e *Engine) Applicable(doc *Document) ([]reports.Result, []int) {
	out := make([]reports.Result, len(e.checks))
	var run []int
	for i, c := range e.checks {
		out[i] = e.base(c)
		if !slices.Contains(c.Targets, doc.Kind) {
			out[i].Status, out[i].OutOfScope = reports.StatusSkip, true
			out[i].Messages = []string{fmt.Sprintf("not applicable to %s targets (applies to %s)", doc.Kind, strings.Join(c.Targets, ", "))}
			continue
		}
		if status, msg, ok := e.gate(c, doc); !ok {
			out[i].Status, out[i].Messages = status, []string{msg}
			out[i].OutOfScope = status == statusAbsent
			if out[i].OutOfScope {
				out[i].Status = reports.StatusSkip
			}
			continue
		}
		run = append(run, i)
	}
	return out, run
}

// EvaluateQuery evaluates the checks in run with q, their combined query
// (Query(run)), and decides their results in out; decided, when set, is
// told each outcome. When one check breaks the combined query, the checks
// are evaluated one by one so that only the check at fault is reported as
// an error. hook, when set, gives each evaluation its own options.
func (e *Engine) EvaluateQuery(ctx context.Context, q *Query, input ast.Value, out []reports.Result, run []int, decided func(i int, o Outcome), hook EvalHook) error {
	sets, err := e.evalSets(ctx, &q.query, input, len(run), hook)
	if err == nil {
		for j, i := range run {
			e.Decide(&out[i], sets[j])
			if decided != nil {
				decided(i, sets[j])
			}
		}
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for _, i := range run {
		q, err := e.singleQuery(i)
		var sets []Outcome
		if err == nil {
			sets, err = e.evalSets(ctx, q, input, 1, hook)
		}
		if err == nil {
			e.Decide(&out[i], sets[0])
			if decided != nil {
				decided(i, sets[0])
			}
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		out[i].Status = reports.StatusError
		out[i].Messages = []string{fmt.Sprintf("evaluating %s: %v", e.checks[i].File, err)}
	}
	return nil
}

// EvalHook gives one evaluation options of a wrapper's own, and done is
// called when that evaluation is over. Each evaluation asks anew: state
// such as a virtual cache must not outlive the evaluation that filled it,
// least of all one that failed half way.
type EvalHook func() (opts []rego.EvalOption, done func())

// Query is the prepared query that evaluates one set of checks together.
type Query struct {
	query rego.PreparedEvalQuery
}

// maxCombined bounds the prepared queries kept, one per set of checks run
// together. With the memo the set follows what each host misses, which a
// varied fleet could make into very many sets.
const maxCombined = 256

// queryKey names a set of checks by their indices.
func queryKey(run []int) string {
	key := make([]byte, 0, 4*len(run))
	for _, i := range run {
		key = strconv.AppendInt(key, int64(i), 10)
		key = append(key, ',')
	}
	return string(key)
}

// Query returns the prepared query that evaluates exactly the checks at
// the given indices (in the order Applicable gives them), preparing it on
// first use and keeping it while fewer than maxCombined are kept.
func (e *Engine) Query(run []int) (*Query, error) {
	key := queryKey(run)
	if set, ok := e.combined.Load(key); ok {
		return set.(*Query), nil
	}
	subset := make([]Check, len(run))
	for j, i := range run {
		subset[j] = e.checks[i]
	}
	q, err := e.prepare(combinedQuery(subset))
	if err != nil {
		return nil, fmt.Errorf("preparing the query: %w", err)
	}
	set := &Query{query: q}
	if e.QueriesFull() {
		return set, nil
	}
	actual, loaded := e.combined.LoadOrStore(key, set)
	if !loaded {
		e.nCombined.Add(1)
	}
	return actual.(*Query), nil
}

// HasQuery says whether the combined query of run is prepared and kept.
func (e *Engine) HasQuery(run []int) bool {
	_, ok := e.combined.Load(queryKey(run))
	return ok
}

// QueriesFull says whether the engine keeps no more prepared queries: a
// wrapper that evaluates varied subsets of checks then does better to
// evaluate a set whose query is kept.
func (e *Engine) QueriesFull() bool { return e.nCombined.Load() >= e.maxQueries }

// QueriesKept is how many prepared queries the engine keeps.
func (e *Engine) QueriesKept() int { return int(e.nCombined.Load()) }

// Modules are the pack's modules as parsed, keyed by file, before the
// compiler rewrote them: what a static reader of the policies wants. They
// must not be changed.
func (e *Engine) Modules() map[string]*ast.Module { return e.modules }

// Compiler is the compiled pack, for a wrapper that analyses what the
// checks read. It must not be changed.
func (e *Engine) Compiler() *ast.Compiler { return e.compiler }

func (e *Engine) base(c Check) reports.Result {
	return reports.Result{
		ID:          c.ID,
		Title:       c.Title,
		Description: c.Description,
		Severity:    c.Severity,
		Remediation: c.Remediation,
		Controls:    c.Controls,
		Package:     c.Package,
		File:        c.File,
		Location:    c.Location,
		Messages:    []string{},
	}
}

// statusAbsent is gate's answer when a required collector found nothing
// of what the check judges (no sshd installed, none running): the check is
// skipped as not applicable to this target, which is no gap in coverage,
// unlike facts that could not be had. Collectors say not_applicable only
// when what the packages and units say agrees; a package that is installed
// with its file missing is their error instead.
const statusAbsent = "absent"

// gate decides, before evaluation, whether a check that applies to this
// document's kind of target can run on it.
func (e *Engine) gate(c Check, doc *Document) (status, msg string, ok bool) {
	for _, name := range c.Requires {
		st, found := doc.Collectors[name]
		switch {
		case !found:
			return reports.StatusSkip, fmt.Sprintf("collector %s did not run for this target", name), false
		case st.Status == facts.StatusOK:
		case st.Status == facts.StatusError:
			return reports.StatusError, fmt.Sprintf("collector %s failed: %s", name, st.Reason), false
		case st.Status == facts.StatusNotApplicable:
			return statusAbsent, fmt.Sprintf("%s not applicable: %s", name, st.Reason), false
		default:
			return reports.StatusSkip, fmt.Sprintf("%s %s: %s", name, strings.ReplaceAll(st.Status, "_", " "), st.Reason), false
		}
	}
	for _, name := range c.Judges {
		if st, found := doc.Collectors[name]; found && st.Status == facts.StatusError {
			return reports.StatusError, fmt.Sprintf("collector %s failed: %s", name, st.Reason), false
		}
	}
	return "", "", true
}
