package reports

import (
	"strings"
)

// Domain is the policy domain of a result: the middle of its Rego package
// (gpuhost.<domain>.<name>) or, failing that, the second part of its id
// (GH-<DOMAIN>-001), lower-cased. Reports group and class results by it.
func (r Result) Domain() string {
	if rest, ok := strings.CutPrefix(r.Package, "gpuhost."); ok {
		if d, _, ok := strings.Cut(rest, "."); ok && d != "" {
			return d
		}
	}
	parts := strings.Split(r.ID, "-")
	if len(parts) >= 3 && parts[1] != "" {
		return strings.ToLower(parts[1])
	}
	return "other"
}

// Tally counts results by status and failures by severity without touching
// the report: renderers only read, and a caller that forgot Summarize still
// gets true counts.
func Tally(rep *Report) Summary {
	s := Summary{ByStatus: map[string]int{}, BySeverity: map[string]int{}}
	for _, st := range Statuses {
		s.ByStatus[st] = 0
	}
	for _, sev := range Severities {
		s.BySeverity[sev] = 0
	}
	for _, res := range rep.Results {
		s.Total++
		s.ByStatus[res.Status]++
		if res.Status == StatusFail {
			s.BySeverity[res.Severity]++
		}
		if res.Status == StatusSkip && res.OutOfScope {
			s.NotApplicable++
		}
	}
	return s
}

// String is a waiver scope in words, e.g. "kinds image, host; hosts gpu-*".
func (s WaiverScope) String() string {
	var parts []string
	if len(s.Kinds) > 0 {
		parts = append(parts, "kinds "+strings.Join(s.Kinds, ", "))
	}
	if len(s.Hosts) > 0 {
		parts = append(parts, "hosts "+strings.Join(s.Hosts, ", "))
	}
	return strings.Join(parts, "; ")
}
