package scan

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/reports"
)

// Selection chooses the checks a scan reports, as kube-bench's --check and
// --skip and trivy's --severity do: Only, when set, keeps the checks some
// pattern of it matches, and Skip then drops those some pattern of it
// matches. A pattern is a check's id (GH-SSH-001), a glob over ids
// (GH-SSH-*, as path.Match reads it), a folder of the pack (ssh, iam,
// net: the checks under it) or a severity (critical, high, medium, low,
// info), all without regard to case.
type Selection struct {
	Only, Skip []string
}

// UnmatchedError is a pattern that matches no check of the pack: a typo,
// most likely, which must not quietly select nothing.
type UnmatchedError struct {
	Pattern string
	// Words are what a pattern may name in this pack, for a caller that
	// says which one was meant.
	Words []string
}

func (e *UnmatchedError) Error() string {
	return fmt.Sprintf("%q matches no check of the pack", e.Pattern)
}

// Compile holds every pattern to the pack's checks and returns whether a
// check, by its id, is selected; nil when the selection is empty.
func (s Selection) Compile(checks []engine.Check) (func(id string) bool, error) {
	if len(s.Only) == 0 && len(s.Skip) == 0 {
		return nil, nil
	}
	matches := func(p string, c engine.Check) bool {
		p = strings.ToLower(p)
		id := strings.ToLower(c.ID)
		ok, _ := path.Match(p, id)
		return ok || p == strings.ToLower(path.Dir(c.File)) || p == c.Severity
	}
	for _, p := range slices.Concat(s.Only, s.Skip) {
		if _, err := path.Match(strings.ToLower(p), ""); err != nil {
			return nil, fmt.Errorf("%q: %w", p, err)
		}
		if !slices.ContainsFunc(checks, func(c engine.Check) bool { return matches(p, c) }) {
			return nil, &UnmatchedError{Pattern: p, Words: words(checks)}
		}
	}
	selected := map[string]bool{}
	for _, c := range checks {
		matchesAny := func(list []string) bool {
			return slices.ContainsFunc(list, func(p string) bool { return matches(p, c) })
		}
		selected[c.ID] = (len(s.Only) == 0 || matchesAny(s.Only)) && !matchesAny(s.Skip)
	}
	return func(id string) bool { return selected[id] }, nil
}

// words are the ids, folders and severities patterns may name.
func words(checks []engine.Check) []string {
	seen := map[string]bool{}
	for _, c := range checks {
		seen[c.ID], seen[path.Dir(c.File)] = true, true
	}
	for _, s := range reports.Severities {
		seen[s] = true
	}
	out := make([]string, 0, len(seen))
	for w := range seen {
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}

// WithSelection reports only the checks selected says are: the others are
// left out of the report, its summary, its coverage and its exit code, as
// if the pack did not hold them.
func WithSelection(selected func(id string) bool) Option {
	return func(s *Scanner) { s.selected = selected }
}
