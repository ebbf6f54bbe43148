package compliance

import (
	"bytes"
	"encoding/xml"
	"io"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/reports"
)

const base = `
name: base
title: Base
benchmark: {title: Bench, version: v1}
sections: {"1": One, "2": Two}
controls:
  - id: "1.1"
    title: whole check
    level: 1
    rules:
      - xccdf: rule_a
        checks: [GH-A-001]
  - id: "1.2"
    title: by subject
    level: 1
    rules:
      - xccdf: rule_b
        checks: ["GH-B-001 /etc/shadow"]
      - xccdf: rule_c
        checks: ["GH-B-001 /etc/passwd"]
  - id: "2.1"
    title: not judged
    level: 1
    rules:
      - xccdf: rule_d
  - id: "2.2"
    title: by hand
    level: 1
    manual: read the policy document
`

const tailored = `
name: tailored
title: Tailored
benchmark: {title: Bench, version: v1}
extends: base
controls:
  - id: "2.10"
    title: level two
    level: 2
    rules:
      - xccdf: rule_e
        checks: [GH-C-001]
tailoring:
  - control: "1.1"
    reason: breaks GPU containers
    compensating: [GH-C-001]
`

func set(t *testing.T, files map[string]string) *Set {
	t.Helper()
	raw := map[string][]byte{}
	for k, v := range files {
		raw[k] = []byte(v)
	}
	s, err := NewSet(raw, "test")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func byID(c *reports.Compliance) map[string]reports.Control {
	m := map[string]reports.Control{}
	for _, ctl := range c.Controls {
		m[ctl.ID] = ctl
	}
	return m
}

// TestJudge holds the rules a reviewer relies on: a control passes only
// when every rule of it was judged and passed; a finding about another
// subject does not fail it; a rule nothing judges leaves it not evaluated;
// a manual control is never a pass.
func TestJudge(t *testing.T) {
	s := set(t, map[string]string{"base": base})
	p, err := s.Get("base")
	if err != nil {
		t.Fatal(err)
	}
	results := []reports.Result{
		{ID: "GH-A-001", Status: reports.StatusPass},
		{ID: "GH-B-001", Status: reports.StatusFail, Remediation: "chmod 0640 /etc/shadow", Findings: []reports.Finding{
			{Message: "/etc/shadow is 0644; want 0640 or stricter", Subject: "/etc/shadow"},
		}},
	}
	c := byID(p.Judge(results))
	want := map[string]string{"1.1": "pass", "1.2": "fail", "2.1": "not_evaluated", "2.2": "manual"}
	for id, st := range want {
		if c[id].Status != st {
			t.Errorf("control %s: %s (%s); want %s", id, c[id].Status, c[id].Reason, st)
		}
	}
	if r := c["1.2"].Rules; len(r) != 2 || r[0].Status != "fail" || r[1].Status != "pass" {
		t.Errorf("1.2's rules: %+v; want rule_b fail (its subject), rule_c pass (no finding about /etc/passwd)", r)
	}
	if c["1.2"].Remediation == "" || len(c["1.2"].Findings) != 1 {
		t.Errorf("1.2 carries no remediation or not exactly its finding: %+v", c["1.2"])
	}

	// A check the scan did not run leaves its control not evaluated.
	c = byID(p.Judge(results[1:]))
	if c["1.1"].Status != "not_evaluated" || !strings.Contains(c["1.1"].Reason, "GH-A-001 is not in this scan") {
		t.Errorf("1.1 without its check: %s (%s)", c["1.1"].Status, c["1.1"].Reason)
	}
	// A failure that names no subjects cannot pass a rule by subject.
	c = byID(p.Judge([]reports.Result{{ID: "GH-B-001", Status: reports.StatusFail, Messages: []string{"something is wrong"}}}))
	if c["1.2"].Status != "not_evaluated" {
		t.Errorf("1.2 on a failure without subjects: %s; want not_evaluated", c["1.2"].Status)
	}
	// A skip out of scope does not apply; any other skip was not evaluated.
	c = byID(p.Judge([]reports.Result{{ID: "GH-A-001", Status: reports.StatusSkip, OutOfScope: true}}))
	if c["1.1"].Status != "not_applicable" {
		t.Errorf("1.1 out of scope: %s", c["1.1"].Status)
	}
}

func TestTailoring(t *testing.T) {
	s := set(t, map[string]string{"base": base, "tailored": tailored})
	p, err := s.Get("tailored")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Controls) != 5 {
		t.Fatalf("tailored has %d controls; want base's 4 and its own", len(p.Controls))
	}
	ok := []reports.Result{{ID: "GH-A-001", Status: reports.StatusFail, Findings: []reports.Finding{{Message: "m"}}}, {ID: "GH-C-001", Status: reports.StatusPass}}
	c := byID(p.Judge(ok))
	if c["1.1"].Status != "tailored" || c["1.1"].Reason != "breaks GPU containers" {
		t.Errorf("tailored control: %s (%s); want tailored with its reason", c["1.1"].Status, c["1.1"].Reason)
	}
	bad := []reports.Result{{ID: "GH-A-001", Status: reports.StatusPass}, {ID: "GH-C-001", Status: reports.StatusFail, Messages: []string{"compensation missing"}}}
	c = byID(p.Judge(bad))
	if c["1.1"].Status != "fail" || !strings.Contains(c["1.1"].Reason, "compensating") {
		t.Errorf("tailored control whose compensating check fails: %s (%s); want fail", c["1.1"].Status, c["1.1"].Reason)
	}
}

func TestBadProfiles(t *testing.T) {
	for name, tc := range map[string]struct {
		files map[string]string
		want  string
	}{
		"unknown key":   {map[string]string{"base": base + "tailorng: []\n"}, "tailorng"},
		"wrong folder":  {map[string]string{"other": base}, "name it as its folder"},
		"cycle":         {map[string]string{"a": "name: a\ntitle: A\nbenchmark: {title: B, version: v}\nextends: b\ncontrols: []\n", "b": "name: b\ntitle: B\nbenchmark: {title: B, version: v}\nextends: a\ncontrols: []\n"}, "cycle"},
		"missing base":  {map[string]string{"tailored": tailored}, "does not have"},
		"no rules":      {map[string]string{"base": strings.Replace(base, "    manual: read the policy document\n", "", 1)}, "either rules"},
		"tailors ghost": {map[string]string{"base": base, "tailored": strings.Replace(tailored, `control: "1.1"`, `control: "9.9"`, 1)}, "does not have"},
	} {
		t.Run(name, func(t *testing.T) {
			raw := map[string][]byte{}
			for k, v := range tc.files {
				raw[k] = []byte(v)
			}
			_, err := NewSet(raw, "test")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one saying %q", err, tc.want)
			}
		})
	}
}

// TestShippedProfilesParse holds the pack's own profiles to the rules
// above, and each rule id to the form ComplianceAsCode gives them.
func TestShippedProfilesParse(t *testing.T) {
	s := shipped(t)
	if len(s.Names()) < 2 {
		t.Fatalf("the pack ships %v", s.Names())
	}
	for _, name := range s.Names() {
		p, _ := s.Get(name)
		for _, c := range p.Controls {
			for _, r := range c.Rules {
				if strings.ContainsAny(r.XCCDF, " :/") || strings.HasPrefix(r.XCCDF, "xccdf_") {
					t.Errorf("%s control %s: rule %q is not a short ComplianceAsCode rule id", name, c.ID, r.XCCDF)
				}
			}
		}
	}
}

// ssgContent is where Debian's ssg-debderived puts ComplianceAsCode's
// Ubuntu 22.04 content (`make deps` installs it).
const ssgContent = "/usr/share/xml/scap/ssg/content/ssg-ubuntu2204-xccdf.xml"

// TestProfilesFollowTheContent holds each profile's rules to the XCCDF
// profile it names: the same rules, each under the control number the
// content gives it, so a rule the content adds or moves shows up here
// rather than as a control no report mentions.
func TestProfilesFollowTheContent(t *testing.T) {
	raw, err := os.ReadFile(ssgContent)
	if err != nil {
		t.Skipf("ComplianceAsCode's content is not installed (%v); make deps installs ssg-debderived", err)
	}
	var bench struct {
		Profiles []struct {
			ID      string `xml:"id,attr"`
			Selects []struct {
				IDRef    string `xml:"idref,attr"`
				Selected bool   `xml:"selected,attr"`
			} `xml:"select"`
		} `xml:"Profile"`
	}
	if err := xml.Unmarshal(raw, &bench); err != nil {
		t.Fatal(err)
	}
	cis := map[string]string{}
	for _, r := range allRules(t, raw) {
		for _, ref := range r.References {
			if ref.Href == "https://www.cisecurity.org/benchmark/ubuntu_linux/" {
				cis[r.ID] = ref.Text
			}
		}
	}
	s := shipped(t)
	for _, name := range s.Names() {
		p, _ := s.Get(name)
		if p.XCCDF.Profile == "" {
			continue
		}
		want := map[string]bool{}
		for _, prof := range bench.Profiles {
			if prof.ID != p.XCCDF.Profile {
				continue
			}
			for _, sel := range prof.Selects {
				if sel.Selected {
					want[sel.IDRef] = true
				}
			}
		}
		if len(want) == 0 {
			t.Errorf("%s: the content has no profile %s", name, p.XCCDF.Profile)
			continue
		}
		got := map[string]bool{}
		for _, c := range p.Controls {
			for _, r := range c.Rules {
				id := p.XCCDF.RulePrefix + r.XCCDF
				got[id] = true
				if !want[id] {
					t.Errorf("%s control %s: rule %s is not in %s", name, c.ID, r.XCCDF, p.XCCDF.Profile)
				} else if cis[id] != c.ID {
					t.Errorf("%s: rule %s is under control %s; the content numbers it %s", name, r.XCCDF, c.ID, cis[id])
				}
			}
		}
		for id := range want {
			if !got[id] {
				t.Errorf("%s: %s selects %s, which no control lists", name, p.XCCDF.Profile, id)
			}
		}
	}
}

type xccdfRule struct {
	ID         string `xml:"id,attr"`
	References []struct {
		Href string `xml:"href,attr"`
		Text string `xml:",chardata"`
	} `xml:"reference"`
}

// allRules finds every Rule element, however deeply the content's groups
// nest them.
func allRules(t *testing.T, raw []byte) []xccdfRule {
	t.Helper()
	var out []xccdfRule
	d := xml.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "Rule" {
			var r xccdfRule
			if err := d.DecodeElement(&r, &se); err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
	}
}

func shipped(t *testing.T) *Set {
	t.Helper()
	files := map[string][]byte{}
	entries, err := fs.ReadDir(policies.FS, Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := fs.ReadFile(policies.FS, Dir+"/"+e.Name()+"/"+File)
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = b
	}
	s, err := NewSet(files, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
