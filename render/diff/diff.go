// Package diff compares two gpuhost.report/v1 documents check by check, so a
// reviewer (or a CI job) sees what a policy, image or waiver change did:
// which checks newly fail, which were fixed, which waivers were added or
// lapsed, and how the pack itself changed.
package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/reports"
)

// Schema is the value of Diff.Schema in the JSON form.
const Schema = "gpuhost.report-diff/v1"

// Bounds on an input report: a report is untrusted input (it may come from
// another pipeline's artifacts), and a real pack has tens of checks.
const (
	maxReportBytes = 64 << 20
	maxResults     = 100_000
)

// Side names one of the two reports compared.
type Side struct {
	File         string         `json:"file"`
	Target       reports.Target `json:"target"`
	PolicyDigest string         `json:"policy_digest,omitempty"`
	ToolVersion  string         `json:"tool_version,omitempty"`
}

// Change is one check in one category of the diff. Old* fields are empty for
// a check only in the new report, and New* fields for one only in the old.
type Change struct {
	ID          string          `json:"id"`
	Title       string          `json:"title"`
	OldSeverity string          `json:"old_severity,omitempty"`
	NewSeverity string          `json:"new_severity,omitempty"`
	OldStatus   string          `json:"old_status,omitempty"`
	NewStatus   string          `json:"new_status,omitempty"`
	Messages    []string        `json:"messages,omitempty"`
	Waiver      *reports.Waiver `json:"waiver,omitempty"`
}

// Severity is the check's current severity: the new one when the check is
// still in the pack.
func (c Change) Severity() string {
	if c.NewSeverity != "" {
		return c.NewSeverity
	}
	return c.OldSeverity
}

// Diff is the comparison of two reports. A check may sit in more than one
// list: a waiver that lapsed is both an expired waiver and a new failure.
type Diff struct {
	Schema string `json:"schema"`
	Old    Side   `json:"old"`
	New    Side   `json:"new"`
	// NewFailures did not fail (or error) before and do now.
	NewFailures []Change `json:"new_failures"`
	// Fixed failed (or errored) before and now pass or skip.
	Fixed []Change `json:"fixed"`
	// StillFailing failed (or errored) in both.
	StillFailing []Change `json:"still_failing"`
	// SeverityChanged are checks in both whose severity differs.
	SeverityChanged []Change `json:"severity_changed"`
	// WaiversAdded are waived now and were not before.
	WaiversAdded []Change `json:"waivers_added"`
	// WaiversExpired carry a lapsed waiver now, or went from waived to failing.
	WaiversExpired []Change `json:"waivers_expired"`
	// ChecksAdded are only in the new report; ChecksRemoved only in the old.
	ChecksAdded   []Change `json:"checks_added"`
	ChecksRemoved []Change `json:"checks_removed"`
}

// HasNewFailures reports whether anything fails now that did not before: the
// condition a CI job gates on.
func (d *Diff) HasNewFailures() bool { return len(d.NewFailures) > 0 }

// failing is fail or error: an error is never a pass, so a check that starts
// erroring is as much a regression as one that starts failing.
func failing(status string) bool {
	return status == reports.StatusFail || status == reports.StatusError
}

// Load reads one report file and checks that it is a gpuhost.report/v1
// document whose check ids are unique and whose statuses are known.
func Load(file string) (*reports.Report, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxReportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading report %s: %w", file, err)
	}
	if len(data) > maxReportBytes {
		return nil, fmt.Errorf("reading report %s: larger than %d bytes", file, maxReportBytes)
	}
	return Parse(data, file)
}

// Parse decodes and validates a report; name is used in errors.
func Parse(data []byte, name string) (*reports.Report, error) {
	var rep reports.Report
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("parsing report %s: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("parsing report %s: more than one JSON document; diff compares single reports", name)
	}
	if rep.Schema != reports.Schema {
		return nil, fmt.Errorf("parsing report %s: schema %q, want %q", name, rep.Schema, reports.Schema)
	}
	if len(rep.Results) > maxResults {
		return nil, fmt.Errorf("parsing report %s: %d results, more than %d", name, len(rep.Results), maxResults)
	}
	seen := make(map[string]bool, len(rep.Results))
	for i, r := range rep.Results {
		switch {
		case r.ID == "":
			return nil, fmt.Errorf("parsing report %s: result %d has no id", name, i+1)
		case seen[r.ID]:
			return nil, fmt.Errorf("parsing report %s: check %s appears more than once", name, r.ID)
		case !slices.Contains(reports.Statuses, r.Status):
			return nil, fmt.Errorf("parsing report %s: check %s has unknown status %q", name, r.ID, r.Status)
		}
		seen[r.ID] = true
	}
	return &rep, nil
}

// Compare diffs two reports by check id. oldName and newName label them.
func Compare(oldRep, newRep *reports.Report, oldName, newName string) *Diff {
	d := &Diff{
		Schema: Schema,
		Old:    Side{File: oldName, Target: oldRep.Target, PolicyDigest: oldRep.PolicyDigest, ToolVersion: oldRep.ToolVersion},
		New:    Side{File: newName, Target: newRep.Target, PolicyDigest: newRep.PolicyDigest, ToolVersion: newRep.ToolVersion},
	}
	before := make(map[string]*reports.Result, len(oldRep.Results))
	for i := range oldRep.Results {
		before[oldRep.Results[i].ID] = &oldRep.Results[i]
	}
	after := make(map[string]bool, len(newRep.Results))
	for i := range newRep.Results {
		n := &newRep.Results[i]
		after[n.ID] = true
		o := before[n.ID]
		c := Change{ID: n.ID, Title: n.Title, NewSeverity: n.Severity, NewStatus: n.Status, Messages: n.Messages, Waiver: n.Waiver}
		if o == nil {
			d.ChecksAdded = append(d.ChecksAdded, c)
			if failing(n.Status) {
				d.NewFailures = append(d.NewFailures, c)
			}
			continue
		}
		c.OldSeverity, c.OldStatus = o.Severity, o.Status
		switch {
		case failing(n.Status) && failing(o.Status):
			d.StillFailing = append(d.StillFailing, c)
		case failing(n.Status):
			d.NewFailures = append(d.NewFailures, c)
		case failing(o.Status) && (n.Status == reports.StatusPass || n.Status == reports.StatusSkip):
			d.Fixed = append(d.Fixed, c)
		}
		if o.Severity != n.Severity {
			d.SeverityChanged = append(d.SeverityChanged, c)
		}
		if n.Status == reports.StatusWaived && o.Status != reports.StatusWaived {
			d.WaiversAdded = append(d.WaiversAdded, c)
		}
		lapsedNow := n.Waiver != nil && n.Waiver.Expired && (o.Waiver == nil || !o.Waiver.Expired)
		if lapsedNow || (o.Status == reports.StatusWaived && failing(n.Status)) {
			d.WaiversExpired = append(d.WaiversExpired, c)
		}
	}
	for _, o := range oldRep.Results {
		if !after[o.ID] {
			d.ChecksRemoved = append(d.ChecksRemoved, Change{ID: o.ID, Title: o.Title, OldSeverity: o.Severity, OldStatus: o.Status})
		}
	}
	for _, l := range d.lists() {
		sortChanges(*l.changes)
	}
	return d
}

// sortChanges orders a list most severe first, then by id, so output is
// stable whatever order the reports listed their results in.
func sortChanges(cs []Change) {
	slices.SortStableFunc(cs, func(a, b Change) int {
		if ra, rb := reports.SeverityRank(a.Severity()), reports.SeverityRank(b.Severity()); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.ID, b.ID)
	})
}

type list struct {
	title   string
	changes *[]Change
}

// lists names the categories in the order every format shows them.
func (d *Diff) lists() []list {
	return []list{
		{"New failures", &d.NewFailures},
		{"Fixed", &d.Fixed},
		{"Waivers expired", &d.WaiversExpired},
		{"Waivers added", &d.WaiversAdded},
		{"Severity changed", &d.SeverityChanged},
		{"Still failing", &d.StillFailing},
		{"Checks added", &d.ChecksAdded},
		{"Checks removed", &d.ChecksRemoved},
	}
}
