// Package waivers loads waiver files and applies them to results. A waiver
// turns a failing check into "waived" for matching targets until it expires;
// the waived result stays in every report, with who approved it, why, until
// when, and the ticket that tracks it.
package waivers

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/gpuhost/gpuhost/internal/boundedyaml"
	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/reports"
)

// dateLayout is the only accepted form of Expires: a calendar date, so that
// nobody has to think about time zones when approving one.
const dateLayout = "2006-01-02"

// Bounds on a waiver file, which anyone with write access to a repository
// may have edited: its size, its entries, and each scope list.
const (
	// MaxFile bounds a waiver file's size.
	MaxFile       = 4 << 20
	maxEntries    = 10000
	maxScopeItems = 100
)

// CVECheck is the check whose findings a waiver's cve list waives one by
// one: each of its findings has the CVE id as its subject.
const CVECheck = "GH-SC-001"

// maxCVEs bounds one waiver's cve list.
const maxCVEs = 1000

// cveID is a CVE or GitHub advisory id, as trivy's findings carry them.
var cveID = regexp.MustCompile(`^(CVE-[0-9]{4}-[0-9]{4,}|GHSA(-[23456789cfghjmpqrvwx]{4}){3})$`)

// Kinds lists the target kinds a scope may name; they are facts.Target kinds.
var Kinds = []string{"rootfs", "image", "host", "facts", "oci"}

// Waiver is one entry of a waiver file. Every field but Scope is required:
// a waiver nobody can trace to a ticket is not accountable.
type Waiver struct {
	ID            string `yaml:"id"`
	Target        string `yaml:"target"`
	Justification string `yaml:"justification"`
	ApprovedBy    string `yaml:"approved_by"`
	Expires       string `yaml:"expires"`
	Ticket        string `yaml:"ticket"`
	Scope         *Scope `yaml:"scope,omitempty"`
	// CVE narrows a waiver of the CVE check (CVECheck) to these
	// vulnerabilities: it waives their findings, not the check, so a new
	// CVE still fails the image. Each is waived by id across packages.
	CVE []string `yaml:"cve,omitempty"`

	expires time.Time
}

// Scope narrows a waiver beyond its target glob. An empty list places no
// limit; a non-empty one must match.
type Scope struct {
	// Kinds are the target kinds the waiver covers (rootfs, image, host,
	// facts, oci).
	Kinds []string `yaml:"kinds,omitempty"`
	// Hosts are globs on the target's hostname. A target without a
	// hostname matches none of them.
	Hosts []string `yaml:"hosts,omitempty"`
}

// Load reads and validates a waiver file, without checking any signature.
// Every problem in the file is reported at once, each naming the entry.
func Load(file string) ([]Waiver, error) {
	data, err := userfile.Read(file, MaxFile)
	if err != nil {
		return nil, fmt.Errorf("loading waivers: %w", err)
	}
	return Parse(data, file)
}

// Parse validates waiver YAML; name is used in errors.
func Parse(data []byte, name string) ([]Waiver, error) {
	list, err := decode(data, name)
	if err != nil {
		return nil, fmt.Errorf("parsing waivers: %w", err)
	}
	if len(list) > maxEntries {
		return nil, fmt.Errorf("parsing waivers %s: %d entries, more than %d", name, len(list), maxEntries)
	}
	var problems []string
	for i := range list {
		w := &list[i]
		label := fmt.Sprintf("entry %d", i+1)
		if w.ID != "" {
			label += " (" + w.ID + ")"
		}
		for _, p := range w.validate() {
			problems = append(problems, label+": "+p)
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return nil, fmt.Errorf("invalid waivers in %s:\n  %s", name, strings.Join(problems, "\n  "))
	}
	return list, nil
}

// decode reads the YAML list within boundedyaml's limits.
func decode(data []byte, name string) (list []Waiver, err error) {
	err = boundedyaml.Decode(name, data, &list, yaml.DisallowUnknownField())
	return list, err
}

// validate checks one entry and fills its parsed expiry.
func (w *Waiver) validate() []string {
	var problems []string
	for _, f := range []struct{ name, value string }{
		{"id", w.ID}, {"target", w.Target}, {"justification", w.Justification},
		{"approved_by", w.ApprovedBy}, {"expires", w.Expires}, {"ticket", w.Ticket},
	} {
		if strings.TrimSpace(f.value) == "" {
			problems = append(problems, f.name+" is required")
		}
	}
	if w.Expires != "" {
		t, err := time.Parse(dateLayout, w.Expires)
		if err != nil {
			problems = append(problems, fmt.Sprintf("expires %q is not a date (YYYY-MM-DD)", w.Expires))
		}
		w.expires = t
	}
	if len(w.CVE) > 0 {
		switch {
		case w.ID != CVECheck:
			problems = append(problems, fmt.Sprintf("cve is only for %s, the CVE check, not %s", CVECheck, w.ID))
		case len(w.CVE) > maxCVEs:
			problems = append(problems, fmt.Sprintf("cve lists more than %d ids", maxCVEs))
		default:
			for _, id := range w.CVE {
				if !cveID.MatchString(id) {
					problems = append(problems, fmt.Sprintf("cve %q is not a CVE or GHSA id", id))
				}
			}
		}
	}
	if w.Target != "" && !validGlob(w.Target) {
		problems = append(problems, fmt.Sprintf("target %q is not a valid glob", w.Target))
	}
	if s := w.Scope; s != nil {
		if len(s.Kinds) > maxScopeItems || len(s.Hosts) > maxScopeItems {
			problems = append(problems, fmt.Sprintf("scope lists more than %d kinds or hosts", maxScopeItems))
			return problems
		}
		if len(s.Kinds) == 0 && len(s.Hosts) == 0 {
			problems = append(problems, "scope is empty: give kinds, hosts, or leave scope out")
		}
		for _, k := range s.Kinds {
			if !slices.Contains(Kinds, k) {
				problems = append(problems, fmt.Sprintf("scope kind %q is not one of %s", k, strings.Join(Kinds, ", ")))
			}
		}
		for _, h := range s.Hosts {
			if strings.TrimSpace(h) == "" || !validGlob(h) {
				problems = append(problems, fmt.Sprintf("scope host %q is not a valid glob", h))
			}
		}
	}
	return problems
}

func validGlob(g string) bool {
	_, err := path.Match(g, "")
	return err == nil
}

// Expired reports whether the waiver no longer applies at now. A waiver is
// good through the whole of its expiry day, in UTC.
func (w Waiver) Expired(now time.Time) bool {
	return !now.UTC().Before(w.expires.AddDate(0, 0, 1))
}

// Matches reports whether the waiver covers a target: its target glob
// matches the ref, the ref's last element or the hostname ("*" matches
// everything), and the target passes the scope. A target of unknown kind
// passes no kind scope: when in doubt, the failure stands.
func (w Waiver) Matches(t reports.Target) bool {
	if !w.matchesTarget(t) {
		return false
	}
	if s := w.Scope; s != nil {
		if len(s.Kinds) > 0 && !slices.Contains(s.Kinds, t.Kind) {
			return false
		}
		if len(s.Hosts) > 0 && !anyGlob(s.Hosts, t.Hostname) {
			return false
		}
	}
	return true
}

func (w Waiver) matchesTarget(t reports.Target) bool {
	if w.Target == "*" {
		return true
	}
	for _, s := range []string{t.Ref, path.Base(t.Ref), t.Hostname} {
		if s != "" && anyGlob([]string{w.Target}, s) {
			return true
		}
	}
	return false
}

func anyGlob(globs []string, s string) bool {
	if s == "" {
		return false
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, s); ok {
			return true
		}
	}
	return false
}

// ApplyTarget waives failing results covered by an unexpired waiver for the
// target. A result covered only by expired waivers stays failed and says
// which waiver lapsed. Errors are never waived: a check that could not run
// is not a risk anyone can accept. Waivers with a cve list waive findings
// of the CVE check instead (see applyCVEs).
func ApplyTarget(results []reports.Result, list []Waiver, target reports.Target, now time.Time) {
	for i := range results {
		r := &results[i]
		if r.Status != reports.StatusFail {
			continue
		}
		var lapsed *Waiver
		for j := range list {
			w := &list[j]
			if w.ID != r.ID || len(w.CVE) > 0 || !w.Matches(target) {
				continue
			}
			if w.Expired(now) {
				if lapsed == nil || w.expires.After(lapsed.expires) {
					lapsed = w
				}
				continue
			}
			r.Status = reports.StatusWaived
			r.Waiver = w.report(false)
			lapsed = nil
			break
		}
		if lapsed != nil {
			r.Waiver = lapsed.report(true)
			r.Messages = append(r.Messages, lapsedText(lapsed))
		}
		if r.Status == reports.StatusFail && r.ID == CVECheck {
			applyCVEs(r, list, target, now)
		}
	}
}

func lapsedText(w *Waiver) string {
	return fmt.Sprintf("waiver approved by %s (ticket %s) expired on %s; the failure counts again", w.ApprovedBy, w.Ticket, w.Expires)
}

// applyCVEs marks each finding of the CVE check whose subject (the CVE id)
// an unexpired waiver lists as waived by it. The result is waived when
// every finding is; one finding left fails it. A finding covered only by
// expired waivers says which lapsed.
func applyCVEs(r *reports.Result, list []Waiver, target reports.Target, now time.Time) {
	if len(r.Findings) == 0 {
		return
	}
	open := 0
	var first *reports.Waiver
	for i := range r.Findings {
		f := &r.Findings[i]
		var lapsed *Waiver
		for j := range list {
			w := &list[j]
			if w.ID != r.ID || !slices.Contains(w.CVE, f.Subject) || !w.Matches(target) {
				continue
			}
			if w.Expired(now) {
				if lapsed == nil || w.expires.After(lapsed.expires) {
					lapsed = w
				}
				continue
			}
			f.Waiver, lapsed = w.report(false), nil
			break
		}
		if f.Waiver == nil {
			open++
			if lapsed != nil {
				f.Waiver = lapsed.report(true)
				r.Messages = append(r.Messages, f.Subject+": "+lapsedText(lapsed))
			}
			continue
		}
		if first == nil {
			first = f.Waiver
		}
	}
	if open == 0 {
		r.Status, r.Waiver = reports.StatusWaived, first
	}
}

func (w *Waiver) report(expired bool) *reports.Waiver {
	rw := &reports.Waiver{
		Justification: w.Justification,
		ApprovedBy:    w.ApprovedBy,
		Expires:       w.Expires,
		Target:        w.Target,
		Expired:       expired,
		Ticket:        w.Ticket,
	}
	if s := w.Scope; s != nil {
		rw.Scope = &reports.WaiverScope{Kinds: slices.Clone(s.Kinds), Hosts: slices.Clone(s.Hosts)}
	}
	rw.CVE = slices.Clone(w.CVE)
	return rw
}
