package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
)

// validationReports are the reports each outside validator sees: the
// golden input (every status, hostile text, waivers), the same with
// caveats, an empty report and a large generated one.
func validationReports(t *testing.T) map[string]*reports.Report {
	t.Helper()
	caveated := loadReport(t)
	caveated.Caveats = []string{"demo vulnerability DB: not for release gating", "a second <caveat> & more"}
	return map[string]*reports.Report{
		"golden":   loadReport(t),
		"empty":    {Schema: reports.Schema, Target: reports.Target{Kind: "host", Ref: "x"}},
		"bench":    benchReport(60),
		"caveated": caveated,
	}
}

// writeRendered renders rep as format into dir and returns the file.
func writeRendered(t *testing.T, dir, name, format string, rep *reports.Report) string {
	t.Helper()
	file := filepath.Join(dir, name+"."+format)
	if err := os.WriteFile(file, rendered(t, mustLookup(t, format), rep), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestJUnitSchema validates the JUnit report with xmllint against the
// Jenkins junit-10 rules (testdata/junit-10.xsd says where they come from).
func TestJUnitSchema(t *testing.T) {
	xmllint := testutil.Tool(t, "xmllint", "libxml2-utils")
	dir := t.TempDir()
	for name, rep := range validationReports(t) {
		file := writeRendered(t, dir, name, "junit", rep)
		testutil.Run(t, time.Minute, xmllint, "--noout", "--schema", filepath.Join("testdata", "junit-10.xsd"), file)
	}
	// The schema refuses what Jenkins refuses: a skipped count on the root.
	golden, err := os.ReadFile(filepath.Join("testdata", "golden", "report.junit"))
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.junit")
	if err := os.WriteFile(bad, bytes.Replace(golden, []byte("<testsuites "), []byte(`<testsuites skipped="1" `), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(xmllint, "--noout", "--schema", filepath.Join("testdata", "junit-10.xsd"), bad).CombinedOutput(); err == nil {
		t.Errorf("xmllint accepted testsuites@skipped:\n%s", out)
	}
}

// TestSARIFMultitool validates the SARIF report with the SARIF Multitool:
// the golden input, an empty report, a large one, and targets whose
// IMAGEROOT is a real file URI (an absolute tree with a blank in its name,
// a host).
func TestSARIFMultitool(t *testing.T) {
	reps := validationReports(t)
	tree := loadReport(t)
	tree.Target = reports.Target{Kind: "rootfs", Ref: "/srv/images/gpu node rootfs", ScannedAt: "2025-03-01T12:00:00Z"}
	reps["rootfs"] = tree
	host := loadReport(t)
	host.Target = reports.Target{Kind: "host", Ref: "gpu-node-01", Hostname: "gpu-node-01", ScannedAt: "2025-03-01T12:00:00Z"}
	reps["host"] = host
	dir := t.TempDir()
	var files []string
	for name, rep := range reps {
		files = append(files, writeRendered(t, dir, name, "sarif", rep))
	}
	files = append(files, filepath.Join("testdata", "golden", "report.sarif"))
	testutil.ValidateSARIF(t, files...)
}

// TestSeveralReportsInOneDocument: SARIF and JUnit hold several hosts'
// reports in one document that their validators accept: a run per host,
// each with its own automation category, and a testsuite per host under
// one root that counts them all.
func TestSeveralReportsInOneDocument(t *testing.T) {
	a := loadReport(t)
	a.Target = reports.Target{Kind: "host", Ref: "gpu-node-01", Hostname: "gpu-node-01", ScannedAt: "2025-03-01T12:00:00Z"}
	b := loadReport(t)
	b.Target = reports.Target{Kind: "host", Ref: "gpu-node-02", Hostname: "gpu-node-02", ScannedAt: "2025-03-01T12:00:00Z"}
	reps := []*reports.Report{a, b, {Schema: reports.Schema, Target: reports.Target{Kind: "image", Ref: "disk.qcow2"}}}
	dir := t.TempDir()
	write := func(format string) []byte {
		t.Helper()
		var buf bytes.Buffer
		if err := mustLookup(t, format).(Merger).RenderAll(&buf, reps); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "all."+format), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	sarifDoc := write("sarif")
	var log struct {
		Runs []struct {
			AutomationDetails struct{ ID string } `json:"automationDetails"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(sarifDoc, &log); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, r := range log.Runs {
		ids[r.AutomationDetails.ID] = true
	}
	if len(log.Runs) != 3 || len(ids) != 3 {
		t.Errorf("%d runs with %d categories, want 3 of each: %v", len(log.Runs), len(ids), ids)
	}
	testutil.ValidateSARIF(t, filepath.Join(dir, "all.sarif"))

	junitDoc := write("junit")
	var suites struct {
		Tests  int `xml:"tests,attr"`
		Suites []struct {
			Tests int `xml:"tests,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(junitDoc, &suites); err != nil {
		t.Fatal(err)
	}
	if len(suites.Suites) != 3 || suites.Tests != suites.Suites[0].Tests+suites.Suites[1].Tests+suites.Suites[2].Tests {
		t.Errorf("%d testsuites, root counts %d tests", len(suites.Suites), suites.Tests)
	}
	xmllint := testutil.Tool(t, "xmllint", "libxml2-utils")
	testutil.Run(t, time.Minute, xmllint, "--noout", "--schema", filepath.Join("testdata", "junit-10.xsd"), filepath.Join(dir, "all.junit"))
}
