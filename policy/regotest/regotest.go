// Package regotest runs a policy pack's Rego unit tests through OPA's
// tester, with coverage: the review tool behind `gpuhost policy test`.
package regotest

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/tester"
)

// Result is one Rego test's outcome.
type Result struct {
	Package string
	Name    string
	File    string
	Line    int
	Status  string // pass | fail | error | skip
	Detail  string
}

// Report is a `policy test` run: every test, and coverage of the
// policies (test files excluded) as a percentage of lines.
type Report struct {
	Results  []Result
	Coverage float64
	// FileCoverage maps each policy file to its line coverage percentage.
	FileCoverage map[string]float64
	// Uncovered maps each policy file to its uncovered line numbers.
	Uncovered map[string][]int
}

// Failed counts tests that failed or errored.
func (r *Report) Failed() int {
	n := 0
	for _, t := range r.Results {
		if t.Status == "fail" || t.Status == "error" {
			n++
		}
	}
	return n
}

// Run runs the Rego tests of a pack through OPA's tester, with coverage.
func Run(ctx context.Context, src *engine.Source) (*Report, error) {
	modules := map[string]*ast.Module{}
	for name, text := range src.Modules {
		m, err := ast.ParseModuleWithOpts(name, string(text), ast.ParserOptions{ProcessAnnotation: true, RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, &engine.CompileError{Err: err}
		}
		modules[name] = m
	}
	cov := cover.New()
	ch, err := tester.NewRunner().
		SetModules(modules).
		SetCoverageQueryTracer(cov).
		RaiseBuiltinErrors(true).
		RunTests(ctx, nil)
	if err != nil {
		return nil, &engine.CompileError{Err: err}
	}
	rep := &Report{FileCoverage: map[string]float64{}, Uncovered: map[string][]int{}}
	for r := range ch {
		tr := Result{Package: strings.TrimPrefix(r.Package, "data."), Name: r.Name, Status: "pass"}
		if r.Location != nil {
			tr.File, tr.Line = r.Location.File, r.Location.Row
		}
		switch {
		case r.Error != nil:
			tr.Status, tr.Detail = "error", r.Error.Error()
		case r.Fail:
			tr.Status = "fail"
			if r.FailedAt != nil {
				tr.Detail = fmt.Sprintf("failed at %v", r.FailedAt)
			}
		case r.Skip:
			tr.Status = "skip"
		}
		rep.Results = append(rep.Results, tr)
	}
	sort.Slice(rep.Results, func(i, j int) bool {
		a, b := rep.Results[i], rep.Results[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	policyOnly := map[string]*ast.Module{}
	for name, m := range modules {
		if !strings.HasSuffix(name, "_test.rego") {
			policyOnly[name] = m
		}
	}
	cr := cov.Report(policyOnly)
	covered, total := 0, 0
	for name, fr := range cr.Files {
		if !strings.HasSuffix(name, "_test.rego") {
			c, n := fr.CoveredLines, fr.CoveredLines+fr.NotCoveredLines
			covered += c
			total += n
			if n > 0 {
				rep.FileCoverage[name] = 100 * float64(c) / float64(n)
			}
			for _, rng := range fr.NotCovered {
				for l := rng.Start.Row; l <= rng.End.Row; l++ {
					rep.Uncovered[name] = append(rep.Uncovered[name], l)
				}
			}
		}
	}
	if total > 0 {
		rep.Coverage = 100 * float64(covered) / float64(total)
	}
	return rep, nil
}
