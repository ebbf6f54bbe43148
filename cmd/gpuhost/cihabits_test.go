package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdvisoryScanAndExitCode: --fail-on none passes a failing scan but
// not one that cannot be trusted, and --exit-code replaces a failure's 1,
// never a 2; 0 and 2 are refused as --exit-code, naming what to use.
func TestAdvisoryScanAndExitCode(t *testing.T) {
	weak := filepath.Join("testdata", "rootfs-weak")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"scan", "rootfs", weak}, 1},
		{[]string{"scan", "rootfs", weak, "--fail-on", "none"}, 0},
		{[]string{"scan", "rootfs", weak, "--exit-code", "7"}, 7},
		{[]string{"scan", "rootfs", weak, "--fail-on", "none", "--exit-code", "7"}, 0},
		{[]string{"scan", "rootfs", weak, "--exit-code", "0"}, 2},
		{[]string{"scan", "rootfs", weak, "--exit-code", "2"}, 2},
		{[]string{"scan", "rootfs", weak, "--exit-code", "126"}, 2},
	} {
		if o := gpuhost(t, "", tc.args...); o.code != tc.want {
			t.Errorf("%v: exit %d, want %d\n%s", tc.args, o.code, tc.want, o.stderr)
		}
	}

	// A document whose collector failed cannot be trusted: an advisory scan
	// and --exit-code leave its 2 alone.
	data, err := os.ReadFile(filepath.Join("..", "..", "scan", "testdata", "weak-facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["collectors"].(map[string]any)["ssh"] = map[string]any{"status": "error", "reason": "sshd_config: line 3: bad keyword"}
	broken := filepath.Join(t.TempDir(), "broken.json")
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"scan", "facts", broken, "--fail-on", "none"},
		{"scan", "facts", broken, "--exit-code", "7"},
		{"scan", "facts", broken, "--summary", "--fail-on", "none"},
	} {
		if o := gpuhost(t, "", args...); o.code != 2 {
			t.Errorf("%v: exit %d, want 2: the scan cannot be trusted\n%s", args, o.code, o.stderr)
		}
	}
}

// TestChecksSelection: --checks and --skip-checks choose what the report
// holds, and so what the exit code follows; a pattern that matches nothing
// exits 2 naming the word meant.
func TestChecksSelection(t *testing.T) {
	weak := filepath.Join("testdata", "rootfs-weak")
	o := gpuhost(t, "", "scan", "rootfs", weak, "--format", "json", "--checks", "ssh", "--skip-checks", "GH-SSH-00*")
	rep := jsonReport(t, o)
	if len(rep.Results) == 0 {
		t.Fatal("--checks ssh selected nothing")
	}
	for _, r := range rep.Results {
		if !strings.HasPrefix(r.ID, "GH-SSH-01") {
			t.Errorf("%s reported; want only GH-SSH-01x", r.ID)
		}
	}
	if rep.Summary.Total != len(rep.Results) {
		t.Errorf("summary counts %d checks, the report holds %d", rep.Summary.Total, len(rep.Results))
	}
	// The weak tree fails at high, but not in a check that passes there.
	pass := gpuhost(t, "", "scan", "rootfs", weak, "--format", "json")
	var passing string
	for _, r := range jsonReport(t, pass).Results {
		if r.Status == "pass" {
			passing = r.ID
			break
		}
	}
	if o := gpuhost(t, "", "scan", "rootfs", weak, "--checks", passing); o.code != 0 {
		t.Errorf("--checks %s (a passing check): exit %d\n%s", passing, o.code, o.stderr)
	}
	if o := gpuhost(t, "", "scan", "rootfs", weak, "--checks", "GH-SSH-01"); o.code != 2 || !strings.Contains(o.stderr, `did you mean "GH-SSH-001"`) {
		t.Errorf("--checks GH-SSH-01: exit %d\n%s", o.code, o.stderr)
	}
}

// TestOutputFile: -o writes the --format output to a file, whole, once the
// scan has a verdict (a failing one too); a scan that stops without one
// leaves an earlier file as it was, and a path that is not a regular file
// is refused, not replaced.
func TestOutputFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "scan.json")
	if o := gpuhost(t, "", "scan", "rootfs", filepath.Join("testdata", "rootfs-weak"), "--format", "json", "-o", out); o.code != 1 || o.stdout != "" {
		t.Fatalf("-o: exit %d, stdout %q\n%s", o.code, o.stdout, o.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(data, &rep); err != nil || rep["schema"] != "gpuhost.report/v1" {
		t.Fatalf("%s holds no report: %v\n%.200s", out, err, data)
	}
	if o := gpuhost(t, "", "scan", "rootfs", filepath.Join(dir, "missing"), "--output", out); o.code != 2 {
		t.Errorf("a scan with no verdict: exit %d", o.code)
	}
	if again, err := os.ReadFile(out); err != nil || string(again) != string(data) {
		t.Errorf("a scan with no verdict changed %s: %v", out, err)
	}
	if o := gpuhost(t, "", "scan", "rootfs", filepath.Join("testdata", "rootfs-weak"), "-o", dir); o.code != 2 || !strings.Contains(o.stderr, "--output") {
		t.Errorf("-o a directory: exit %d\n%s", o.code, o.stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestWaiverWarnings: an expired waiver and one naming no check are said
// on stderr at scan time, the second with the id meant, and neither
// changes the verdict.
func TestWaiverWarnings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "waivers.yaml")
	list := `- id: GH-SSH-001
  target: "*"
  justification: lab
  approved_by: sec@example.com
  ticket: SEC-1
  expires: "2020-01-01"
- id: GH-SSH-01
  target: "*"
  justification: lab
  approved_by: sec@example.com
  ticket: SEC-2
  expires: "2099-01-01"
`
	if err := os.WriteFile(file, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	weak := filepath.Join("testdata", "rootfs-weak")
	o := gpuhost(t, "", "scan", "rootfs", weak, "--waivers", file, "--format", "json")
	if o.code != 1 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	for _, want := range []string{
		`msg="a waiver has expired, so it no longer waives" file=` + file + ` id=GH-SSH-001 expires=2020-01-01 ticket=SEC-1`,
		`waives nothing; did you mean \"GH-SSH-001\"?" file=` + file + ` id=GH-SSH-01 ticket=SEC-2`,
	} {
		if !strings.Contains(o.stderr, want) {
			t.Errorf("stderr does not say %s:\n%s", want, o.stderr)
		}
	}
	for _, r := range jsonReport(t, o).Results {
		if r.ID == "GH-SSH-001" && r.Status != "fail" {
			t.Errorf("GH-SSH-001 is %s under an expired waiver", r.Status)
		}
	}
}

// TestSeveralDocumentsOneFile: scan facts of several documents writes one
// SARIF log (a run per host) and one JUnit file (a testsuite per host),
// never documents back to back, and refuses HTML, which holds one report.
func TestSeveralDocumentsOneFile(t *testing.T) {
	docs := []string{filepath.Join("..", "..", "scan", "testdata", "weak-facts.json"), filepath.Join("..", "..", "scan", "testdata", "compliant-host.json")}
	o := gpuhost(t, "", append([]string{"scan", "facts", "--format", "sarif"}, docs...)...)
	var log struct {
		Runs []json.RawMessage `json:"runs"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &log); err != nil || len(log.Runs) != 2 {
		t.Errorf("sarif: exit %d, %d runs, %v\n%.300s", o.code, len(log.Runs), err, o.stdout)
	}
	o = gpuhost(t, "", append([]string{"scan", "facts", "--format", "junit"}, docs...)...)
	if n := strings.Count(o.stdout, "<testsuites "); n != 1 || strings.Count(o.stdout, "<testsuite ") != 2 {
		t.Errorf("junit: %d roots, %d suites\n%.300s", n, strings.Count(o.stdout, "<testsuite "), o.stdout)
	}
	o = gpuhost(t, "", append([]string{"scan", "facts", "--format", "html"}, docs...)...)
	if o.code != 2 || !strings.Contains(o.stderr, "--format html holds one report") {
		t.Errorf("html: exit %d\n%s", o.code, o.stderr)
	}
}

func TestColorOnlyOnAnAbleTerminal(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for _, tc := range []struct {
		noColor  bool
		vars     map[string]string
		terminal bool
		want     bool
	}{
		{false, map[string]string{"TERM": "xterm-256color"}, true, true},
		{false, map[string]string{"TERM": "xterm-256color"}, false, false},
		{true, map[string]string{"TERM": "xterm-256color"}, true, false},
		{false, map[string]string{"TERM": "xterm", "NO_COLOR": "1"}, true, false},
		{false, map[string]string{"TERM": "dumb"}, true, false},
	} {
		if got := colorful(tc.noColor, env(tc.vars), tc.terminal); got != tc.want {
			t.Errorf("colorful(%v, %v, terminal %v) = %v", tc.noColor, tc.vars, tc.terminal, got)
		}
	}
}
