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
	"sort"
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

// checkRoot is the package prefix every check lives under.
const checkRoot = "gpuhost."

// Check is one policy package's metadata, as its METADATA block declares it.
type Check struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	Severity    string `json:"severity"`
	// SeverityParam names the parameter that sets Severity, when the
	// METADATA gives one (custom.severity_param): a site decides how much
	// a finding weighs there, and every report shows the weight it chose.
	SeverityParam string              `json:"severity_param,omitempty"`
	Remediation   string              `json:"remediation"`
	Controls      map[string][]string `json:"controls"`
	Targets       []string            `json:"targets"`
	Requires      []string            `json:"requires"`
	// Judges lists collectors the check reads and whose absence it judges
	// itself: a check that must fail when NVML is down cannot be skipped
	// because NVML is down. Only a collector error stops it.
	Judges   []string `json:"judges,omitempty"`
	Package  string   `json:"package"`
	File     string   `json:"file"`
	hasSkip  bool
	hasError bool
}

// Engine evaluates a compiled policy pack. It is safe for concurrent use.
type Engine struct {
	checks  []Check
	single  []rego.PreparedEvalQuery
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
	modules := map[string]*ast.Module{}
	raw := map[string][]byte{}
	var defaults []map[string]any
	for _, src := range o.sources {
		for _, name := range sortedKeys(src.Modules) {
			if strings.HasSuffix(name, "_test.rego") {
				continue
			}
			key := name
			if len(o.sources) > 1 {
				key = src.Name + ":" + name
			}
			m, err := ast.ParseModuleWithOpts(key, string(src.Modules[name]), ast.ParserOptions{
				ProcessAnnotation: true,
				RegoVersion:       ast.RegoV1,
			})
			if err != nil {
				return nil, &CompileError{Err: err}
			}
			modules[key] = m
			raw[key] = src.Modules[name]
		}
		if src.Params != nil {
			defaults = append(defaults, src.Params)
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
	e := &Engine{checks: checks, params: params, modules: modules, compiler: compiler, maxQueries: maxCombined}
	if o.maxQueries > 0 {
		e.maxQueries = int64(o.maxQueries)
	}
	e.digest = digestOf(raw, params)

	// Params are read as AST values: converting them from Go maps on every
	// read cost more than evaluating most checks.
	store := inmem.NewFromObjectWithOpts(map[string]any{"gpuhost": map[string]any{"params": params}},
		inmem.OptReturnASTValuesOnRead(true))
	e.prepare = func(query string) (rego.PreparedEvalQuery, error) {
		return rego.New(
			rego.Query(query),
			rego.Compiler(compiler),
			rego.Store(store),
			rego.StoreReadAST(true),
			rego.StrictBuiltinErrors(true),
			rego.GenerateJSON(asTerm),
		).PrepareForEval(ctx)
	}
	all := make([]int, len(checks))
	for i := range all {
		all[i] = i
	}
	if _, err := e.Query(all); err != nil {
		return nil, &CompileError{Err: err}
	}
	e.single = make([]rego.PreparedEvalQuery, len(checks))
	for i, c := range checks {
		if e.single[i], err = e.prepare(combinedQuery([]Check{c})); err != nil {
			return nil, &CompileError{Err: fmt.Errorf("%s: %w", c.File, err)}
		}
	}
	return e, nil
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

func extractChecks(modules map[string]*ast.Module) ([]Check, error) {
	var checks []Check
	var problems []string
	seen := map[string]string{}
	for _, name := range sortedKeys(modules) {
		m := modules[name]
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
		if !strings.HasPrefix(pkg, checkRoot) {
			continue
		}
		var meta *ast.Annotations
		for _, a := range m.Annotations {
			if a.Scope == "package" {
				meta = a
			}
		}
		hasDeny, hasSkip, hasError := false, false, false
		for _, r := range m.Rules {
			switch r.Head.Ref()[0].Value.String() {
			case "deny":
				hasDeny = true
			case "skip":
				hasSkip = true
			case "error":
				hasError = true
			}
		}
		if meta == nil {
			if hasDeny {
				problems = append(problems, fmt.Sprintf("%s: package %s has deny rules but no package METADATA", name, pkg))
			}
			// A package without METADATA and without deny is a library.
			continue
		}
		c, err := checkFromAnnotations(meta, pkg, name)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if !hasDeny {
			problems = append(problems, fmt.Sprintf("%s: check %s has no deny rule", name, c.ID))
			continue
		}
		if prev, dup := seen[c.ID]; dup {
			problems = append(problems, fmt.Sprintf("%s: check id %s is already used by %s", name, c.ID, prev))
			continue
		}
		seen[c.ID] = name
		c.hasSkip, c.hasError = hasSkip, hasError
		checks = append(checks, c)
	}
	if len(problems) > 0 {
		return nil, &CompileError{Err: errors.New(strings.Join(problems, "\n"))}
	}
	if len(checks) == 0 {
		return nil, &CompileError{Err: errors.New("no checks found: no package under gpuhost.* has METADATA and deny")}
	}
	sort.Slice(checks, func(i, j int) bool { return checks[i].ID < checks[j].ID })
	return checks, nil
}

func checkFromAnnotations(a *ast.Annotations, pkg, file string) (Check, error) {
	c := Check{
		Title:       a.Title,
		Description: a.Description,
		Package:     pkg,
		File:        file,
		Controls:    map[string][]string{},
	}
	row := 0
	if a.Location != nil {
		row = a.Location.Row
	}
	bad := func(field string) (Check, error) {
		return Check{}, fmt.Errorf("%s:%d: package %s METADATA: %s", file, row, pkg, field)
	}
	str := func(k string) string { s, _ := a.Custom[k].(string); return s }
	c.ID, c.Severity, c.Remediation = str("id"), str("severity"), str("remediation")
	c.SeverityParam = str("severity_param")
	switch {
	case c.ID == "":
		return bad("custom.id is missing")
	case c.Title == "":
		return bad("title is missing")
	case !reports.ValidSeverity(c.Severity):
		return bad(fmt.Sprintf("custom.severity %q is not one of %s", c.Severity, strings.Join(reports.Severities, ", ")))
	case c.Remediation == "":
		return bad("custom.remediation is missing")
	}
	if ctl, ok := a.Custom["controls"].(map[string]any); ok {
		for fw, ids := range ctl {
			for _, id := range toStrings(ids) {
				c.Controls[fw] = append(c.Controls[fw], id)
			}
		}
	}
	c.Targets = toStrings(a.Custom["targets"])
	c.Requires = toStrings(a.Custom["requires"])
	if _, ok := a.Custom["judges"]; ok {
		c.Judges = toStrings(a.Custom["judges"])
	}
	if len(c.Targets) == 0 {
		return bad("custom.targets is missing")
	}
	return c, nil
}

// paramSeverities sets the severity of each check that takes it from a
// parameter. A missing or unknown value is a compile error: a check that
// fails closed cannot be left weighing nothing.
func paramSeverities(checks []Check, params map[string]any) error {
	for i, c := range checks {
		if c.SeverityParam == "" {
			continue
		}
		v, ok := params[c.SeverityParam].(string)
		if !ok || !reports.ValidSeverity(v) {
			return &CompileError{Err: fmt.Errorf("%s: check %s takes its severity from parameter %s, which is %v; want one of %s",
				c.File, c.ID, c.SeverityParam, params[c.SeverityParam], strings.Join(reports.Severities, ", "))}
		}
		checks[i].Severity = v
	}
	return nil
}

func toStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		out = append(out, fmt.Sprint(e))
	}
	return out
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

// Params returns the effective parameters.
func (e *Engine) Params() map[string]any { return e.params }

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
		sets, err := e.evalSets(ctx, &e.single[i], input, 1, hook)
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
