package scan

import (
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/internal/version"
	"github.com/gpuhost/gpuhost/reports"
)

// SummarySchema is the value of FleetSummary.Schema.
const SummarySchema = "gpuhost.summary/v1"

// maxExamples bounds the host refs a check's row names: enough to start
// looking, never a second copy of the fleet.
const maxExamples = 5

// FleetSummary folds many hosts' reports into one row per check: how many
// hosts fail it, pass it, skip it, error on it or have it waived. It holds
// counts only, so its size does not grow with the fleet. render/summary
// renders it.
type FleetSummary struct {
	Schema       string `json:"schema"`
	FailOn       string `json:"fail_on"`
	FailOnSkip   string `json:"fail_on_skip,omitempty"`
	Hosts        int    `json:"hosts"`
	HostsFailing int    `json:"hosts_failing"`
	// HostsUntrusted counts hosts whose scan cannot be trusted: a check
	// errored or a collector failed.
	HostsUntrusted int            `json:"hosts_untrusted"`
	PolicyDigests  []string       `json:"policy_digests"`
	ToolVersion    string         `json:"tool_version"`
	Checks         []CheckSummary `json:"checks"`

	byID map[string]int
}

// CheckSummary is one check across the fleet.
type CheckSummary struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Severity string `json:"severity"`
	Fail     int    `json:"fail"`
	Error    int    `json:"error"`
	Waived   int    `json:"waived"`
	Skip     int    `json:"skip"`
	Pass     int    `json:"pass"`
	// Failing names the first few hosts (target ref) that fail the check.
	Failing []string `json:"failing"`
}

// NewFleetSummary starts an empty summary; t decides which hosts count as
// failing, as it decides a single scan's exit code.
func NewFleetSummary(t Thresholds) *FleetSummary {
	return &FleetSummary{
		Schema:        SummarySchema,
		FailOn:        t.FailOn,
		FailOnSkip:    t.FailOnSkip,
		PolicyDigests: []string{},
		ToolVersion:   version.String(),
		Checks:        []CheckSummary{},
		byID:          map[string]int{},
	}
}

// Add counts one host's report.
func (s *FleetSummary) Add(rep *reports.Report) {
	s.Hosts++
	if Untrusted(rep) {
		s.HostsUntrusted++
	} else if ExitCode([]*reports.Report{rep}, Thresholds{s.FailOn, s.FailOnSkip}) == ExitFail {
		s.HostsFailing++
	}
	if !slices.Contains(s.PolicyDigests, rep.PolicyDigest) && len(s.PolicyDigests) < maxExamples {
		s.PolicyDigests = append(s.PolicyDigests, rep.PolicyDigest)
	}
	for _, r := range rep.Results {
		i, ok := s.byID[r.ID]
		if !ok {
			i = len(s.Checks)
			s.byID[r.ID] = i
			s.Checks = append(s.Checks, CheckSummary{ID: r.ID, Title: r.Title, Severity: r.Severity, Failing: []string{}})
		}
		c := &s.Checks[i]
		switch r.Status {
		case reports.StatusFail:
			c.Fail++
			if len(c.Failing) < maxExamples {
				c.Failing = append(c.Failing, hostName(rep.Target))
			}
		case reports.StatusError:
			c.Error++
		case reports.StatusWaived:
			c.Waived++
		case reports.StatusSkip:
			c.Skip++
		case reports.StatusPass:
			c.Pass++
		}
	}
}

func hostName(t reports.Target) string {
	if t.Ref != "" {
		return t.Ref
	}
	return t.Hostname
}

// ExitCode is the exit code over every host added, as ExitCode gives it for
// their reports.
func (s *FleetSummary) ExitCode() int {
	switch {
	case s.HostsUntrusted > 0:
		return ExitUntrusted
	case s.HostsFailing > 0:
		return ExitFail
	}
	return ExitPass
}

// Rows are the checks as an operator reads them: the most failing hosts
// first, then errors, then by severity and id.
func (s *FleetSummary) Rows() []CheckSummary {
	rows := slices.Clone(s.Checks)
	slices.SortStableFunc(rows, func(a, b CheckSummary) int {
		if a.Fail != b.Fail {
			return b.Fail - a.Fail
		}
		if a.Error != b.Error {
			return b.Error - a.Error
		}
		if ra, rb := reports.SeverityRank(a.Severity), reports.SeverityRank(b.Severity); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.ID, b.ID)
	})
	return rows
}
