// Package waivers loads waiver files and applies them to results. A waiver
// turns a failing check into "waived" for matching targets until it expires;
// the waived result stays in every report, with who approved it and why.
package waivers

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/gpuhost/gpuhost/reports"
)

// dateLayout is the only accepted form of Expires: a calendar date, so that
// nobody has to think about time zones when approving one.
const dateLayout = "2006-01-02"

// maxFile bounds a waiver file.
const maxFile = 4 << 20

// Waiver is one entry of a waiver file. Every field but Ticket is required.
type Waiver struct {
	ID            string `yaml:"id"`
	Target        string `yaml:"target"`
	Justification string `yaml:"justification"`
	ApprovedBy    string `yaml:"approved_by"`
	Expires       string `yaml:"expires"`
	Ticket        string `yaml:"ticket,omitempty"`

	expires time.Time
}

// Load reads and validates a waiver file. Every problem in the file is
// reported at once, each naming the entry.
func Load(file string) ([]Waiver, error) {
	info, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("loading waivers: %w", err)
	}
	if info.Size() > maxFile {
		return nil, fmt.Errorf("loading waivers %s: larger than %d bytes", file, maxFile)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("loading waivers: %w", err)
	}
	return Parse(data, file)
}

// Parse validates waiver YAML; name is used in errors.
func Parse(data []byte, name string) ([]Waiver, error) {
	var list []Waiver
	dec := yaml.NewDecoder(bytes.NewReader(data), yaml.DisallowUnknownField())
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("parsing waivers %s: %w", name, err)
	}
	var problems []string
	for i := range list {
		w := &list[i]
		label := fmt.Sprintf("entry %d", i+1)
		if w.ID != "" {
			label += " (" + w.ID + ")"
		}
		for field, v := range map[string]string{
			"id": w.ID, "target": w.Target, "justification": w.Justification,
			"approved_by": w.ApprovedBy, "expires": w.Expires,
		} {
			if strings.TrimSpace(v) == "" {
				problems = append(problems, fmt.Sprintf("%s: %s is required", label, field))
			}
		}
		if w.Expires != "" {
			t, err := time.Parse(dateLayout, w.Expires)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: expires %q is not a date (YYYY-MM-DD)", label, w.Expires))
			}
			w.expires = t
		}
		if w.Target != "" {
			if _, err := path.Match(w.Target, ""); err != nil {
				problems = append(problems, fmt.Sprintf("%s: target %q is not a valid glob", label, w.Target))
			}
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return nil, fmt.Errorf("invalid waivers in %s:\n  %s", name, strings.Join(problems, "\n  "))
	}
	return list, nil
}

// Expired reports whether the waiver no longer applies at now. A waiver is
// good through the whole of its expiry day, in UTC.
func (w Waiver) Expired(now time.Time) bool {
	return !now.UTC().Before(w.expires.AddDate(0, 0, 1))
}

// Matches reports whether the waiver's target glob covers a target, given by
// its ref and hostname. "*" covers everything; otherwise the glob is matched
// against the ref, the ref's last element, and the hostname.
func (w Waiver) Matches(ref, hostname string) bool {
	if w.Target == "*" {
		return true
	}
	for _, s := range []string{ref, path.Base(ref), hostname} {
		if s == "" {
			continue
		}
		if ok, _ := path.Match(w.Target, s); ok {
			return true
		}
	}
	return false
}

// Apply waives failing results covered by an unexpired waiver. A result
// covered only by expired waivers stays failed and says which waiver lapsed.
// Errors are never waived: a check that could not run is not a risk anyone
// can accept.
func Apply(results []reports.Result, list []Waiver, ref, hostname string, now time.Time) {
	for i := range results {
		r := &results[i]
		if r.Status != reports.StatusFail {
			continue
		}
		var lapsed *Waiver
		for j := range list {
			w := &list[j]
			if w.ID != r.ID || !w.Matches(ref, hostname) {
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
			r.Messages = append(r.Messages, fmt.Sprintf("waiver approved by %s expired on %s; the failure counts again", lapsed.ApprovedBy, lapsed.Expires))
		}
	}
}

func (w *Waiver) report(expired bool) *reports.Waiver {
	return &reports.Waiver{
		Justification: w.Justification,
		ApprovedBy:    w.ApprovedBy,
		Expires:       w.Expires,
		Target:        w.Target,
		Expired:       expired,
		Ticket:        w.Ticket,
	}
}
