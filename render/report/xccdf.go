package report

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/gpuhost/gpuhost/reports"
)

// xccdfNS is XCCDF 1.2's namespace.
const xccdfNS = "http://checklists.nist.gov/xccdf/1.2"

// The ids of what gpuhost itself defines in an XCCDF document: XCCDF 1.2
// wants xccdf_<reverse DNS>_<kind>_<name>.
const (
	xccdfOwner = "xccdf_dev.gpuhost_"
)

// xccdfResults maps a control or rule status to an XCCDF result. A waived
// rule stays fail (the waiver is in its message): XCCDF's override would
// record a new result, and a waiver does not make a rule pass.
var xccdfResults = map[string]string{
	reports.ControlPass:          "pass",
	reports.ControlFail:          "fail",
	reports.ControlWaived:        "fail",
	reports.ControlError:         "error",
	reports.ControlNotEvaluated:  "notchecked",
	reports.ControlNotApplicable: "notapplicable",
	reports.ControlManual:        "notchecked",
	reports.ControlTailored:      "notselected",
}

// ErrNoCompliance is returned for a report without a compliance block: an
// XCCDF result is a profile's rules, and a scan without --compliance
// judged none.
var ErrNoCompliance = errors.New("the xccdf format needs a compliance profile: scan with --compliance NAME")

// xccdfRenderer writes an XCCDF 1.2 Benchmark holding the profile's rules
// under their ComplianceAsCode ids, and one TestResult per report, so that
// SCAP tooling (oscap xccdf generate report, dashboards that take
// OpenSCAP's results) reads gpuhost's verdicts rule by rule beside
// OpenSCAP's own.
type xccdfRenderer struct{}

var _ Merger = (*xccdfRenderer)(nil)

func (*xccdfRenderer) Format() string { return "xccdf" }

// Ext is the ending of an XCCDF report file.
func (*xccdfRenderer) Ext() string { return "xccdf.xml" }

func (x *xccdfRenderer) Render(w io.Writer, rep *reports.Report) error {
	return x.RenderAll(w, []*reports.Report{rep})
}

// RenderAll writes one Benchmark with a TestResult per report; every
// report must have judged the same profile.
func (*xccdfRenderer) RenderAll(w io.Writer, reps []*reports.Report) error {
	if len(reps) == 0 || reps[0].Compliance == nil {
		return ErrNoCompliance
	}
	first := reps[0].Compliance
	for _, rep := range reps[1:] {
		if rep.Compliance == nil || rep.Compliance.Profile != first.Profile {
			return fmt.Errorf("the xccdf format holds one profile; these reports judged %s and others", first.Profile)
		}
	}
	doc := xccdfBenchmarkOf(first, reps[0].ToolVersion)
	for i, rep := range reps {
		doc.TestResults = append(doc.TestResults, xccdfTestResultOf(rep, i+1, doc.Profile.ID))
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

type xccdfBenchmark struct {
	XMLName     xml.Name          `xml:"Benchmark"`
	NS          string            `xml:"xmlns,attr"`
	ID          string            `xml:"id,attr"`
	Resolved    string            `xml:"resolved,attr"`
	Lang        string            `xml:"xml:lang,attr"`
	DC          string            `xml:"xmlns:dc,attr"`
	Status      string            `xml:"status"`
	Title       string            `xml:"title"`
	Description string            `xml:"description"`
	Platform    *xccdfIDRef       `xml:"platform,omitempty"`
	Version     string            `xml:"version"`
	Metadata    xccdfMetadata     `xml:"metadata"`
	Profile     xccdfProfile      `xml:"Profile"`
	Rules       []xccdfRule       `xml:"Rule"`
	TestResults []xccdfTestResult `xml:"TestResult"`
}

// xccdfMetadata names who made the document, in Dublin Core as XCCDF
// asks.
type xccdfMetadata struct {
	Creator string `xml:"dc:creator"`
}

type xccdfProfile struct {
	ID      string        `xml:"id,attr"`
	Title   string        `xml:"title"`
	Selects []xccdfSelect `xml:"select"`
}

type xccdfSelect struct {
	IDRef    string `xml:"idref,attr"`
	Selected bool   `xml:"selected,attr"`
}

type xccdfRule struct {
	ID        string          `xml:"id,attr"`
	Selected  bool            `xml:"selected,attr"`
	Title     string          `xml:"title"`
	Reference *xccdfReference `xml:"reference,omitempty"`
	Check     *xccdfCheck     `xml:"check,omitempty"`
}

type xccdfReference struct {
	Href string `xml:"href,attr,omitempty"`
	Text string `xml:",chardata"`
}

type xccdfTestResult struct {
	ID         string `xml:"id,attr"`
	StartTime  string `xml:"start-time,attr,omitempty"`
	EndTime    string `xml:"end-time,attr"`
	TestSystem string `xml:"test-system,attr"`
	Version    string `xml:"version,attr"`
	Title      string `xml:"title"`
	// Remarks carry the report's caveats: XCCDF's TestResult has no
	// field more fitting, and a reader of the results sees them first.
	Remarks     []string          `xml:"remark"`
	Profile     xccdfIDRef        `xml:"profile"`
	Target      string            `xml:"target"`
	Facts       *xccdfTargetFacts `xml:"target-facts,omitempty"`
	RuleResults []xccdfRuleResult `xml:"rule-result"`
	Score       xccdfScore        `xml:"score"`
}

type xccdfIDRef struct {
	IDRef string `xml:"idref,attr"`
}

type xccdfTargetFacts struct {
	Facts []xccdfFact `xml:"fact"`
}

type xccdfFact struct {
	Name  string `xml:"name,attr"`
	Type  string `xml:"type,attr"`
	Value string `xml:",chardata"`
}

type xccdfRuleResult struct {
	IDRef    string         `xml:"idref,attr"`
	Time     string         `xml:"time,attr,omitempty"`
	Result   string         `xml:"result"`
	Messages []xccdfMessage `xml:"message"`
	Check    *xccdfCheck    `xml:"check,omitempty"`
}

// xccdfCheck names the gpuhost checks that decided a rule: the checking
// system is gpuhost's policy pack, each reference one check (and the
// subject of its findings the rule is about).
type xccdfCheck struct {
	System string          `xml:"system,attr"`
	Refs   []xccdfCheckRef `xml:"check-content-ref"`
}

type xccdfCheckRef struct {
	Href string `xml:"href,attr"`
	Name string `xml:"name,attr"`
}

// xccdfCheckSystem is the checking system gpuhost's checks belong to.
const xccdfCheckSystem = "https://github.com/gpuhost/gpuhost/policies"

type xccdfMessage struct {
	Severity string `xml:"severity,attr"`
	Text     string `xml:",chardata"`
}

type xccdfScore struct {
	System  string `xml:"system,attr"`
	Maximum string `xml:"maximum,attr"`
	Value   string `xml:",chardata"`
}

// idPart keeps what XCCDF ids may hold (NCName characters) of a name.
var idPart = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func xccdfBenchmarkOf(c *reports.Compliance, version string) xccdfBenchmark {
	name := idPart.ReplaceAllString(c.Profile, "-")
	b := xccdfBenchmark{
		NS:       xccdfNS,
		ID:       xccdfOwner + "benchmark_" + name,
		Resolved: "1",
		Lang:     "en",
		DC:       "http://purl.org/dc/elements/1.1/",
		Status:   "accepted",
		Metadata: xccdfMetadata{Creator: "gpuhost"},
		Title:    "gpuhost: " + c.Title,
		Description: fmt.Sprintf("gpuhost's verdicts on the rules of %s (%s %s), under the rule ids of %s, so that they "+
			"join OpenSCAP's results rule by rule.", c.Title, c.Benchmark, c.Version, c.XCCDFProfile),
		Version: version,
		Profile: xccdfProfile{ID: xccdfOwner + "profile_" + name, Title: c.Title},
	}
	if b.Version == "" {
		b.Version = "unknown"
	}
	if c.Platform != "" {
		b.Platform = &xccdfIDRef{IDRef: c.Platform}
	}
	for _, ctl := range c.Controls {
		for _, r := range ctl.Rules {
			id := ruleID(c, r.ID)
			b.Profile.Selects = append(b.Profile.Selects, xccdfSelect{IDRef: id, Selected: true})
			b.Rules = append(b.Rules, xccdfRule{
				ID: id, Selected: true,
				Title:     fmt.Sprintf("%s %s (%s)", ctl.ID, ctl.Title, r.ID),
				Reference: &xccdfReference{Text: c.Benchmark + " " + c.Version + " " + ctl.ID},
				Check:     checkOf(r.Checks),
			})
		}
	}
	return b
}

// ruleID is a rule's XCCDF id: the profile's (ComplianceAsCode's, for
// the CIS profiles), so that results join; gpuhost's own otherwise.
func ruleID(c *reports.Compliance, short string) string {
	prefix := c.XCCDFRulePrefix
	if prefix == "" {
		prefix = xccdfOwner + "rule_"
	}
	return prefix + idPart.ReplaceAllString(short, "-")
}

func xccdfTestResultOf(rep *reports.Report, n int, profile string) xccdfTestResult {
	c := rep.Compliance
	target := rep.Target.Hostname
	if target == "" {
		target = rep.Target.Ref
	}
	if target == "" {
		target = rep.Target.Kind
	}
	tr := xccdfTestResult{
		ID:         fmt.Sprintf("%stestresult_%s_%d", xccdfOwner, idPart.ReplaceAllString(c.Profile, "-"), n),
		StartTime:  rep.Target.ScannedAt,
		EndTime:    rep.Target.ScannedAt,
		TestSystem: "cpe:/a:gpuhost:gpuhost:" + strings.TrimPrefix(rep.ToolVersion, "v"),
		Version:    rep.ToolVersion,
		Title:      fmt.Sprintf("gpuhost scan of %s %s", rep.Target.Kind, rep.Target.Ref),
		Profile:    xccdfIDRef{IDRef: profile},
		Target:     target,
	}
	for _, c := range rep.Caveats {
		tr.Remarks = append(tr.Remarks, "Caveat: "+c)
	}
	if tr.EndTime == "" {
		tr.EndTime = "1970-01-01T00:00:00Z"
	}
	tr.Facts = &xccdfTargetFacts{}
	for _, f := range [][2]string{
		{"urn:xccdf:fact:gpuhost:target-kind", rep.Target.Kind},
		{"urn:xccdf:fact:gpuhost:facts-digest", rep.FactsDigest},
		{"urn:xccdf:fact:gpuhost:policy-digest", rep.PolicyDigest},
	} {
		if f[1] != "" {
			tr.Facts.Facts = append(tr.Facts.Facts, xccdfFact{Name: f[0], Type: "string", Value: f[1]})
		}
	}
	if len(tr.Facts.Facts) == 0 {
		tr.Facts = nil
	}
	passed, judged := 0, 0
	for _, ctl := range c.Controls {
		for _, r := range ctl.Rules {
			status := r.Status
			if ctl.Status == reports.ControlTailored {
				status = reports.ControlTailored
			}
			rr := xccdfRuleResult{IDRef: ruleID(c, r.ID), Time: rep.Target.ScannedAt, Result: xccdfResults[status]}
			if msg := ruleMessage(ctl, r, status); msg != "" {
				rr.Messages = append(rr.Messages, xccdfMessage{Severity: "info", Text: msg})
			}
			rr.Check = checkOf(r.Checks)
			switch rr.Result {
			case "pass":
				passed++
				judged++
			case "fail":
				judged++
			}
			tr.RuleResults = append(tr.RuleResults, rr)
		}
	}
	// The flat model: one point per rule that passed, out of the rules
	// judged pass or fail.
	tr.Score = xccdfScore{System: "urn:xccdf:scoring:flat", Maximum: fmt.Sprint(judged), Value: fmt.Sprint(passed)}
	return tr
}

// ruleMessage says why a rule is not a plain pass: the reason, and the
// findings about it.
func ruleMessage(ctl reports.Control, r reports.RuleResult, status string) string {
	switch status {
	case reports.ControlPass:
		return ""
	case reports.ControlTailored:
		return "tailored: " + ctl.Reason
	case reports.ControlManual:
		return "checked by hand: " + ctl.Manual
	}
	return r.Reason
}

// checkOf is the check element naming a rule's gpuhost checks; nil for a
// rule no check decides.
func checkOf(refs []string) *xccdfCheck {
	if len(refs) == 0 {
		return nil
	}
	c := &xccdfCheck{System: xccdfCheckSystem}
	for _, ref := range refs {
		c.Refs = append(c.Refs, xccdfCheckRef{Href: "policy-pack", Name: ref})
	}
	return c
}
