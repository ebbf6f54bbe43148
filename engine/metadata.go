package engine

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

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
	SeverityParam string `json:"severity_param,omitempty"`
	Remediation   string `json:"remediation"`
	// Location is the file in the target that carries the fix when a
	// failure names no file of its own (auditd not installed: the package
	// database), so that every finding has a place a code-scanning alert
	// can point at.
	Location string              `json:"location,omitempty"`
	Controls map[string][]string `json:"controls"`
	Targets  []string            `json:"targets"`
	Requires []string            `json:"requires"`
	// Judges lists collectors the check reads and whose absence it judges
	// itself: a check that must fail when NVML is down cannot be skipped
	// because NVML is down. Only a collector error stops it.
	Judges   []string `json:"judges,omitempty"`
	Package  string   `json:"package"`
	File     string   `json:"file"`
	hasSkip  bool
	hasError bool
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
	c.Location = str("location")
	switch {
	case c.ID == "":
		return bad("custom.id is missing")
	case c.Title == "":
		return bad("title is missing")
	case !reports.ValidSeverity(c.Severity):
		return bad(fmt.Sprintf("custom.severity %q is not one of %s", c.Severity, strings.Join(reports.Severities, ", ")))
	case c.Remediation == "":
		return bad("custom.remediation is missing")
	case c.Location != "" && (!path.IsAbs(c.Location) || path.Clean(c.Location) != c.Location || c.Location == "/"):
		return bad(fmt.Sprintf("custom.location %q is not a clean absolute path to a file", c.Location))
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
