// Package lint reviews a policy pack for what the engine would accept but a
// maintainer should not: ids that collide or sit in the wrong folder,
// incomplete METADATA, parameters read but never declared in the pack's
// schema, and Rego v0 syntax.
package lint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/policy/params"
	"github.com/gpuhost/gpuhost/reports"
)

// Rules a Finding can name.
const (
	RuleParse           = "parse"
	RuleRegoV0          = "rego-v0"
	RuleMetadata        = "metadata"
	RuleDuplicateID     = "duplicate-id"
	RuleIDPrefix        = "id-prefix"
	RuleUndeclaredParam = "undeclared-param"
	RuleCompile         = "compile"
)

// MaxDescription is the longest description a check may have: GitHub code
// scanning takes rule descriptions of at most this many characters.
const MaxDescription = 1024

// FolderPrefix maps a pack's top-level folder to the prefix its check ids
// carry, so an id says where its policy lives.
var FolderPrefix = map[string]string{
	"tls":     "GH-TLS-",
	"enc":     "GH-ENC-",
	"net":     "GH-NET-",
	"ssh":     "GH-SSH-",
	"cgroup":  "GH-CGR-",
	"audit":   "GH-AUD-",
	"iam":     "GH-IAM-",
	"key":     "GH-KEY-",
	"runtime": "GH-RT-",
	"pin":     "GH-PIN-",
	"gpu":     "GH-GPU-",
	"drift":   "GH-DRIFT-",
	"sc":      "GH-SC-",
	"sb":      "GH-SB-",
	"pkg":     "GH-PKG-",
	"fs":      "GH-FS-",
	"kernel":  "GH-KRN-",
}

// Finding is one problem in one file.
type Finding struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// String is "FILE:LINE: RULE: MESSAGE", the way compilers report.
func (f Finding) String() string {
	loc := f.File
	if f.Line > 0 {
		loc = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	return fmt.Sprintf("%s: %s: %s", loc, f.Rule, f.Message)
}

// Pack lints the pack in fsys (name is shown in errors). schema is the
// pack's params.schema.json; nil skips the undeclared-param rule. The
// findings are sorted by file and line; the error is for a pack that cannot
// be read at all, or a schema that is not JSON.
func Pack(ctx context.Context, fsys fs.FS, name string, schema []byte) ([]Finding, error) {
	r, err := Review(ctx, fsys, name, schema)
	if err != nil {
		return nil, err
	}
	return r.Findings, nil
}

// Reviewed is what a lint run looked at, so a clean run can say what it
// found clean, and its findings.
type Reviewed struct {
	// Checks counts the distinct check ids; PolicyFiles and TestFiles the
	// Rego files read.
	Checks, PolicyFiles, TestFiles int
	Findings                       []Finding
}

// Review is Pack, with what it reviewed.
func Review(ctx context.Context, fsys fs.FS, name string, schema []byte) (*Reviewed, error) {
	src, err := engine.LoadFS(fsys, name)
	if err != nil {
		return nil, err
	}
	rev := &Reviewed{}
	var declared map[string]bool
	if schema != nil {
		if declared, err = schemaProperties(schema); err != nil {
			return nil, err
		}
	}

	var out []Finding
	add := func(file string, line int, rule, format string, args ...any) {
		out = append(out, Finding{File: file, Line: line, Rule: rule, Message: fmt.Sprintf(format, args...)})
	}

	files := make([]string, 0, len(src.Modules))
	for p := range src.Modules {
		files = append(files, p)
	}
	sort.Strings(files)

	// Files good enough to compile; the params rule needs a compiled pack,
	// and a duplicate or incomplete check would only repeat as a compile
	// error.
	clean := &engine.Source{Name: src.Name, Modules: map[string][]byte{}, Params: src.Params}
	seen := map[string]string{}
	for _, p := range files {
		raw := src.Modules[p]
		m, err := ast.ParseModuleWithOpts(p, string(raw), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			if _, v0err := ast.ParseModuleWithOpts(p, string(raw), ast.ParserOptions{RegoVersion: ast.RegoV0}); v0err == nil {
				add(p, errLine(err), RuleRegoV0, "parses only as Rego v0; rewrite it as v1 (\"if\" before rule bodies, \"contains\" for partial sets): %s", firstLine(err))
			} else {
				add(p, errLine(err), RuleParse, "%s", firstLine(err))
			}
			continue
		}
		if strings.HasSuffix(p, "_test.rego") {
			rev.TestFiles++
			clean.Modules[p] = raw
			continue
		}
		rev.PolicyFiles++
		ok := checkModule(p, m, seen, add)
		if ok {
			clean.Modules[p] = raw
		}
	}

	if declared != nil && len(clean.Modules) > 0 {
		e, err := engine.New(ctx, engine.WithSource(clean))
		if err != nil {
			add(name, 0, RuleCompile, "%s", err)
		} else {
			for _, c := range e.Checks() {
				for _, k := range params.Used(e, c) {
					if k != params.All && !declared[k] {
						add(c.File, 0, RuleUndeclaredParam, "%s reads params.%s, which %s does not declare", c.ID, k, params.SchemaFile)
					}
				}
			}
		}
	}

	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	rev.Checks, rev.Findings = len(seen), out
	return rev, nil
}

// addFinding records one finding against a file and line.
type addFinding func(file string, line int, rule, format string, args ...any)

// checkModule applies the METADATA, id and folder rules to one parsed
// non-test module, and says whether it is fit to compile.
func checkModule(p string, m *ast.Module, seen map[string]string, add addFinding) bool {
	meta, hasDeny, pkgLine := moduleShape(m)
	if meta == nil {
		if hasDeny {
			add(p, pkgLine, RuleMetadata, "package %s has deny rules but no package METADATA", m.Package.Path)
			return false
		}
		return true // a library
	}
	line := pkgLine
	if meta.Location != nil {
		line = meta.Location.Row
	}
	ok := checkDescriptiveMetadata(p, line, meta, add)
	ok = checkListMetadata(p, line, meta, add) && ok
	id := metaString(meta, "id")
	if !hasDeny {
		add(p, pkgLine, RuleMetadata, "check %s has no deny rule", id)
		ok = false
	}
	if id == "" {
		return false
	}
	return checkIDPlacement(p, line, id, seen, add) && ok
}

// moduleShape finds what tells a check from a library: a check has package
// METADATA and deny rules, a library neither. The package line is where a
// finding about the module as a whole points.
func moduleShape(m *ast.Module) (meta *ast.Annotations, hasDeny bool, pkgLine int) {
	for _, a := range m.Annotations {
		if a.Scope == "package" {
			meta = a
		}
	}
	for _, r := range m.Rules {
		if r.Head.Ref()[0].Value.String() == "deny" {
			hasDeny = true
		}
	}
	if m.Package.Location != nil {
		pkgLine = m.Package.Location.Row
	}
	return meta, hasDeny, pkgLine
}

// metaString reads a custom METADATA field as trimmed text, so a value of
// the wrong type or of blanks counts as missing.
func metaString(meta *ast.Annotations, k string) string {
	s, _ := meta.Custom[k].(string)
	return strings.TrimSpace(s)
}

// checkDescriptiveMetadata holds a check to the fields every report shows
// about it (its title, id, severity and remediation), since a report with
// one missing cannot tell a reader what failed or what to do.
func checkDescriptiveMetadata(p string, line int, meta *ast.Annotations, add addFinding) bool {
	ok := true
	missing := func(field string) {
		add(p, line, RuleMetadata, "%s is missing", field)
		ok = false
	}
	if strings.TrimSpace(meta.Title) == "" {
		missing("title")
	}
	if strings.TrimSpace(meta.Description) == "" {
		missing("description")
	}
	if metaString(meta, "id") == "" {
		missing("custom.id")
	}
	switch sev := metaString(meta, "severity"); {
	case sev == "":
		missing("custom.severity")
	case !reports.ValidSeverity(sev):
		add(p, line, RuleMetadata, "custom.severity %q is not one of %s", sev, strings.Join(reports.Severities, ", "))
		ok = false
	}
	if metaString(meta, "remediation") == "" {
		missing("custom.remediation")
	}
	for _, problem := range codeScanningProblems(meta) {
		add(p, line, RuleMetadata, "%s", problem)
		ok = false
	}
	return ok
}

// checkListMetadata holds a check to the fields that place it: the controls
// it maps to, the targets it applies to, and the collectors it needs or
// judges the absence of, which decide whether it runs or is skipped.
func checkListMetadata(p string, line int, meta *ast.Annotations, add addFinding) bool {
	ok := true
	missing := func(field string) {
		add(p, line, RuleMetadata, "%s is missing", field)
		ok = false
	}
	if ctl, _ := meta.Custom["controls"].(map[string]any); len(ctl) == 0 {
		missing("custom.controls")
	}
	if t, _ := meta.Custom["targets"].([]any); len(t) == 0 {
		missing("custom.targets")
	}
	// requires may be an empty list (a check that needs no collector), but
	// it must be said.
	if r, present := meta.Custom["requires"]; !present {
		missing("custom.requires")
	} else if _, isList := r.([]any); !isList {
		add(p, line, RuleMetadata, "custom.requires is not a list")
		ok = false
	}
	// judges is optional: the collectors whose absence the check judges
	// itself rather than being skipped for it.
	if j, present := meta.Custom["judges"]; present {
		list, isList := j.([]any)
		req, _ := meta.Custom["requires"].([]any)
		switch {
		case !isList:
			add(p, line, RuleMetadata, "custom.judges is not a list")
			ok = false
		case overlaps(list, req):
			add(p, line, RuleMetadata, "custom.judges names a collector custom.requires already needs")
			ok = false
		}
	}
	return ok
}

// checkIDPlacement keeps ids unique across the pack, since a check is known
// by its id alone, and flags an id that does not start as its folder's ids
// do. Only a repeated id keeps the module from compiling.
func checkIDPlacement(p string, line int, id string, seen map[string]string, add addFinding) bool {
	ok := true
	if prev, dup := seen[id]; dup {
		add(p, line, RuleDuplicateID, "id %s is already used by %s", id, prev)
		ok = false
	} else {
		seen[id] = p
	}
	if folder, _, nested := strings.Cut(p, "/"); nested {
		if want, known := FolderPrefix[folder]; known && !strings.HasPrefix(id, want) {
			add(p, line, RuleIDPrefix, "id %s is in %s/, whose ids start with %s", id, folder, want)
		}
	}
	return ok
}

func schemaProperties(schema []byte) (map[string]bool, error) {
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &doc); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", params.SchemaFile, err)
	}
	out := make(map[string]bool, len(doc.Properties))
	for k := range doc.Properties {
		out[k] = true
	}
	return out, nil
}

// errLine is the line of the first parse error, when OPA gives one.
func errLine(err error) int {
	var errs ast.Errors
	if errors.As(err, &errs) && len(errs) > 0 && errs[0].Location != nil {
		return errs[0].Location.Row
	}
	return 0
}

func firstLine(err error) string {
	var errs ast.Errors
	if errors.As(err, &errs) && len(errs) > 0 {
		return errs[0].Message
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func overlaps(a, b []any) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// codeScanningProblems is what in a check's METADATA GitHub code scanning
// could not show: no location (the file an alert points at when a failure
// names none of its own), one that is no clean absolute file path, or a
// description longer than it takes.
func codeScanningProblems(meta *ast.Annotations) []string {
	var out []string
	loc, _ := meta.Custom["location"].(string)
	switch loc = strings.TrimSpace(loc); {
	case loc == "":
		out = append(out, "custom.location is missing")
	case !path.IsAbs(loc) || path.Clean(loc) != loc || loc == "/":
		out = append(out, fmt.Sprintf("custom.location %q is not a clean absolute path to a file", loc))
	}
	if n := utf8.RuneCountInString(meta.Description); n > MaxDescription {
		out = append(out, fmt.Sprintf("description is %d characters, more than %d: code scanning cuts it off", n, MaxDescription))
	}
	return out
}
