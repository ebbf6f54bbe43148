package report

import (
	"encoding/xml"
	"io"
	"strings"

	"github.com/gpuhost/gpuhost/reports"
)

type junit struct{}

var _ Merger = (*junit)(nil)

func (*junit) Format() string { return "junit" }

// Ext is the ending of a junit report file.
func (*junit) Ext() string { return "junit.xml" }

// The JUnit XML shape CI systems read (Jenkins, GitLab, GitHub actions
// that publish test results). Waived checks count as skipped: they ran and
// failed, but a person accepted that.
type (
	// The root carries no skipped count: the Jenkins schema (junit-10.xsd)
	// has that attribute only on testsuite, and refuses it here.
	junitSuites struct {
		XMLName  xml.Name     `xml:"testsuites"`
		Name     string       `xml:"name,attr"`
		Tests    int          `xml:"tests,attr"`
		Failures int          `xml:"failures,attr"`
		Errors   int          `xml:"errors,attr"`
		Time     string       `xml:"time,attr"`
		Suites   []junitSuite `xml:"testsuite"`
	}
	junitSuite struct {
		Name       string          `xml:"name,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Skipped    int             `xml:"skipped,attr"`
		Time       string          `xml:"time,attr"`
		Timestamp  string          `xml:"timestamp,attr,omitempty"`
		Hostname   string          `xml:"hostname,attr,omitempty"`
		Properties []junitProperty `xml:"properties>property,omitempty"`
		Cases      []junitCase     `xml:"testcase"`
	}
	junitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		Classname string        `xml:"classname,attr"`
		Name      string        `xml:"name,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitProblem `xml:"failure,omitempty"`
		Error     *junitProblem `xml:"error,omitempty"`
		Skipped   *junitSkipped `xml:"skipped,omitempty"`
	}
	junitProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Body    string `xml:",chardata"`
	}
	junitSkipped struct {
		Message string `xml:"message,attr"`
	}
)

func (j *junit) Render(w io.Writer, rep *reports.Report) error {
	return j.RenderAll(w, []*reports.Report{rep})
}

// RenderAll writes one JUnit document with a testsuite per report, the
// root counting them all: files written back to back would not parse.
func (*junit) RenderAll(w io.Writer, reps []*reports.Report) error {
	doc := junitSuites{Name: "gpuhost", Time: "0"}
	for _, rep := range reps {
		suite := junitSuiteOf(rep)
		doc.Tests += suite.Tests
		doc.Failures += suite.Failures
		doc.Errors += suite.Errors
		doc.Suites = append(doc.Suites, suite)
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

// junitSuiteOf is the testsuite of one report.
func junitSuiteOf(rep *reports.Report) junitSuite {
	suite := junitSuite{
		Name:      "gpuhost " + rep.Target.Kind + " " + rep.Target.Ref,
		Time:      "0",
		Timestamp: rep.Target.ScannedAt,
		Hostname:  rep.Target.Hostname,
	}
	for _, p := range []junitProperty{
		{"target.kind", rep.Target.Kind},
		{"target.ref", rep.Target.Ref},
		{"facts_digest", rep.FactsDigest},
		{"policy_digest", rep.PolicyDigest},
		{"tool_version", rep.ToolVersion},
		{"coverage", coverageLine(reports.CoverageOf(rep))},
	} {
		if p.Value != "" {
			suite.Properties = append(suite.Properties, p)
		}
	}
	for _, c := range rep.Caveats {
		suite.Properties = append(suite.Properties, junitProperty{"caveat", c})
	}
	for _, res := range rep.Results {
		c := junitCase{
			Classname: "gpuhost." + res.Domain(),
			Name:      res.ID + " " + res.Title,
			Time:      "0",
		}
		suite.Tests++
		switch res.Status {
		case reports.StatusFail:
			suite.Failures++
			c.Failure = &junitProblem{Message: firstMessage(res), Type: res.Severity, Body: problemBody(res)}
		case reports.StatusError:
			suite.Errors++
			c.Error = &junitProblem{Message: firstMessage(res), Type: "error", Body: problemBody(res)}
		case reports.StatusSkip:
			suite.Skipped++
			msg := firstMessage(res)
			if kind := skipKind(res); !strings.HasPrefix(msg, kind) {
				msg = kind + ": " + msg
			}
			c.Skipped = &junitSkipped{Message: msg}
		case reports.StatusWaived:
			suite.Skipped++
			c.Skipped = &junitSkipped{Message: waiverLine(res.Waiver)}
		}
		suite.Cases = append(suite.Cases, c)
	}
	return suite
}

// problemBody is the text of a failure or error: every message, then what
// to do about it.
func problemBody(res reports.Result) string {
	var b strings.Builder
	for _, m := range res.Messages {
		b.WriteString(m)
		b.WriteByte('\n')
	}
	if res.Waiver != nil && res.Waiver.Expired {
		b.WriteString("The " + expiredWaiverLine(res.Waiver) + ".\n")
	}
	if res.Remediation != "" {
		b.WriteString("\nRemediation: " + res.Remediation + "\n")
	}
	return b.String()
}
