// Package compliance holds compliance profiles: a benchmark's controls
// (CIS Ubuntu 22.04 Level 1 Server, a GPU container host's tailoring of it),
// each tied to the gpuhost checks that decide it and to the
// ComplianceAsCode rules it corresponds to. A profile is data in the policy
// pack, compliance/<name>/profile.yaml, so it is signed and versioned with
// the checks it names; Judge turns a report's results into the profile's
// per-control verdicts.
package compliance

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/gpuhost/gpuhost/internal/boundedyaml"
)

// Dir is the folder of a pack that holds profiles, one folder per profile
// with its profile.yaml in it: a layout upstream opa loads as data without
// two profiles' keys colliding.
const Dir = "compliance"

// File is a profile's file name inside its folder.
const File = "profile.yaml"

// Profile is one compliance profile as its file says it.
type Profile struct {
	// Name is the name --compliance takes; it is the profile's folder.
	Name  string `yaml:"name"`
	Title string `yaml:"title"`
	// Benchmark is the benchmark the controls are numbered by.
	Benchmark Benchmark `yaml:"benchmark"`
	// Extends names a profile whose controls this one starts from.
	Extends string `yaml:"extends,omitempty"`
	// XCCDF names the ComplianceAsCode benchmark and profile whose rules
	// the controls' rules are.
	XCCDF XCCDF `yaml:"xccdf,omitempty"`
	// Sections titles the benchmark's top-level sections by number.
	Sections map[string]string `yaml:"sections,omitempty"`
	Controls []Control         `yaml:"controls"`
	// Tailoring sets controls aside, each with its reason and what gpuhost
	// checks instead.
	Tailoring []Tailoring `yaml:"tailoring,omitempty"`
}

// Benchmark names a benchmark and its version.
type Benchmark struct {
	Title   string `yaml:"title"`
	Version string `yaml:"version"`
	// Source says where the control numbers were taken from.
	Source string `yaml:"source,omitempty"`
}

// XCCDF names an XCCDF benchmark and profile by their ids.
type XCCDF struct {
	Benchmark string `yaml:"benchmark,omitempty"`
	Profile   string `yaml:"profile,omitempty"`
	// RulePrefix turns a rule's short name into its XCCDF id.
	RulePrefix string `yaml:"rule_prefix,omitempty"`
	// Content is the data stream the ids are from.
	Content string `yaml:"content,omitempty"`
	// Platform is the CPE of the platform the benchmark is written for.
	Platform string `yaml:"platform,omitempty"`
}

// Control is one benchmark control.
type Control struct {
	ID    string `yaml:"id"`
	Title string `yaml:"title"`
	Level int    `yaml:"level"`
	// Manual, for a control no tool can decide, says what a reviewer
	// checks by hand; such a control has no rules.
	Manual string `yaml:"manual,omitempty"`
	Rules  []Rule `yaml:"rules,omitempty"`
}

// Rule is one ComplianceAsCode rule of a control and the gpuhost checks
// that decide it. Each check is "ID" (the check's verdict is the rule's)
// or "ID SUBJECT" (the check's findings about SUBJECT are the rule's).
// A rule with no checks is one gpuhost does not judge yet.
type Rule struct {
	XCCDF  string   `yaml:"xccdf"`
	Checks []string `yaml:"checks,omitempty"`
}

// Tailoring sets one control aside.
type Tailoring struct {
	Control string `yaml:"control"`
	Reason  string `yaml:"reason"`
	// Compensating are checks (in the form of Rule.Checks) that must pass
	// for the tailored control to count as tailored rather than failed.
	Compensating []string `yaml:"compensating,omitempty"`
}

// CheckRef is one entry of Rule.Checks, split.
type CheckRef struct {
	ID, Subject string
}

func (c CheckRef) String() string {
	if c.Subject == "" {
		return c.ID
	}
	return c.ID + " " + c.Subject
}

// ParseCheckRef splits "ID [SUBJECT]".
func ParseCheckRef(s string) CheckRef {
	id, subject, _ := strings.Cut(strings.TrimSpace(s), " ")
	return CheckRef{ID: id, Subject: strings.TrimSpace(subject)}
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*$`)

// Parse reads one profile file; name is its path, for errors. Unknown keys
// are refused: a misspelt "tailoring" would otherwise tailor nothing.
func Parse(name string, data []byte) (*Profile, error) {
	var p Profile
	if err := boundedyaml.Decode(name, data, &p, yaml.Strict()); err != nil {
		return nil, err
	}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &p, nil
}

func (p *Profile) validate() error {
	if !nameRE.MatchString(p.Name) {
		return fmt.Errorf("profile name %q: want lower-case letters, digits, dots and dashes", p.Name)
	}
	if p.Title == "" || p.Benchmark.Title == "" || p.Benchmark.Version == "" {
		return errors.New("a profile needs a title, and a benchmark title and version")
	}
	seen := map[string]bool{}
	for _, c := range p.Controls {
		if c.ID == "" || c.Title == "" {
			return fmt.Errorf("control %q: needs an id and a title", c.ID)
		}
		if seen[c.ID] {
			return fmt.Errorf("control %s is listed twice", c.ID)
		}
		seen[c.ID] = true
		if c.Level < 1 {
			return fmt.Errorf("control %s: level must be 1 or more", c.ID)
		}
		if (c.Manual == "") == (len(c.Rules) == 0) {
			return fmt.Errorf("control %s: give either rules or, for a manual control, what a reviewer checks", c.ID)
		}
		for _, r := range c.Rules {
			if r.XCCDF == "" {
				return fmt.Errorf("control %s: a rule without its xccdf id", c.ID)
			}
		}
	}
	for _, t := range p.Tailoring {
		if t.Control == "" || t.Reason == "" {
			return errors.New("a tailoring entry needs a control and a reason")
		}
	}
	return nil
}

// Set is every profile of a pack, with extends resolved.
type Set struct {
	profiles map[string]*Profile
}

// NewSet parses the files of a pack's profiles, keyed by the folder each
// is in (which must be its name), and resolves extends: a profile gets
// its base's controls, then its own, then its tailoring applies.
func NewSet(files map[string][]byte, packName string) (*Set, error) {
	raw := map[string]*Profile{}
	for _, folder := range slices.Sorted(maps.Keys(files)) {
		name := fmt.Sprintf("%s/%s/%s/%s", packName, Dir, folder, File)
		p, err := Parse(name, files[folder])
		if err != nil {
			return nil, err
		}
		if p.Name != folder {
			return nil, fmt.Errorf("%s: the profile is named %q; name it as its folder", name, p.Name)
		}
		raw[folder] = p
	}
	s := &Set{profiles: map[string]*Profile{}}
	for name := range raw {
		p, err := resolve(raw, name, nil)
		if err != nil {
			return nil, err
		}
		s.profiles[name] = p
	}
	return s, nil
}

// resolve returns the profile with its base's controls and sections
// before its own.
func resolve(raw map[string]*Profile, name string, path []string) (*Profile, error) {
	if slices.Contains(path, name) {
		return nil, fmt.Errorf("compliance profiles extend each other in a cycle: %s", strings.Join(append(path, name), " -> "))
	}
	p, ok := raw[name]
	if !ok {
		return nil, fmt.Errorf("compliance profile %s extends %q, which the pack does not have", path[len(path)-1], name)
	}
	if p.Extends == "" {
		return p, nil
	}
	base, err := resolve(raw, p.Extends, append(path, name))
	if err != nil {
		return nil, err
	}
	out := *p
	out.Controls = append(slices.Clone(base.Controls), p.Controls...)
	out.Tailoring = append(slices.Clone(base.Tailoring), p.Tailoring...)
	out.Sections = maps.Clone(base.Sections)
	if out.Sections == nil {
		out.Sections = map[string]string{}
	}
	maps.Copy(out.Sections, p.Sections)
	if out.XCCDF == (XCCDF{}) {
		out.XCCDF = base.XCCDF
	}
	seen := map[string]bool{}
	for _, c := range out.Controls {
		if seen[c.ID] {
			return nil, fmt.Errorf("compliance profile %s lists control %s that %s already has", name, c.ID, p.Extends)
		}
		seen[c.ID] = true
	}
	for _, t := range out.Tailoring {
		if !seen[t.Control] {
			return nil, fmt.Errorf("compliance profile %s tailors control %s, which it does not have", name, t.Control)
		}
	}
	return &out, nil
}

// Names lists the profiles, sorted.
func (s *Set) Names() []string { return slices.Sorted(maps.Keys(s.profiles)) }

// Get returns the named profile, or an error naming the nearest ones.
func (s *Set) Get(name string) (*Profile, error) {
	if p, ok := s.profiles[name]; ok {
		return p, nil
	}
	return nil, &UnknownError{Name: name, Known: s.Names()}
}

// UnknownError is a --compliance name the pack has no profile of.
type UnknownError struct {
	Name  string
	Known []string
}

func (e *UnknownError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("no compliance profile %q: the policy pack has none", e.Name)
	}
	return fmt.Sprintf("no compliance profile %q (the pack has %s)", e.Name, strings.Join(e.Known, ", "))
}

// CheckIDs lists every check a profile names, sorted, for holding it to
// the pack it ships in.
func (p *Profile) CheckIDs() []string {
	ids := map[string]bool{}
	for _, c := range p.Controls {
		for _, r := range c.Rules {
			for _, ref := range r.Checks {
				ids[ParseCheckRef(ref).ID] = true
			}
		}
	}
	for _, t := range p.Tailoring {
		for _, ref := range t.Compensating {
			ids[ParseCheckRef(ref).ID] = true
		}
	}
	return slices.Sorted(maps.Keys(ids))
}

// Validate holds every profile to the checks the pack compiled: a profile
// that names a check the pack lacks would judge its control by nothing.
func (s *Set) Validate(known func(id string) bool) error {
	for _, name := range s.Names() {
		var missing []string
		for _, id := range s.profiles[name].CheckIDs() {
			if !known(id) {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("compliance profile %s names checks the policy pack does not have: %s", name, strings.Join(missing, ", "))
		}
	}
	return nil
}

// RuleCount is how many XCCDF rules the profile's controls have.
func (p *Profile) RuleCount() int {
	n := 0
	for _, c := range p.Controls {
		n += len(c.Rules)
	}
	return n
}

// JudgedRuleCount is how many of those rules name a gpuhost check.
func (p *Profile) JudgedRuleCount() int {
	n := 0
	for _, c := range p.Controls {
		for _, r := range c.Rules {
			if len(r.Checks) > 0 {
				n++
			}
		}
	}
	return n
}
