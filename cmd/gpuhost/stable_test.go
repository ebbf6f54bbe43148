package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
)

// stableFormats are the report formats whose bytes TestReportsStayTheSame
// holds.
var stableFormats = []string{"table", "json", "sarif", "junit", "markdown", "html"}

// TestReportsStayTheSame holds every report format, on the sample trees and
// the saved facts fixtures, byte for byte to testdata/stable: what a scan
// says must not change by accident when the code around it moves. Only
// what differs from run to run is set aside: the scan's time, the facts
// digest that covers it, the tool's version and where the repository is.
// The files were first written by the tree before the redesign's moves;
// -update rewrites them after a change that means to alter a report.
func TestReportsStayTheSame(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Dir(filepath.Dir(wd))
	cases := []struct {
		name string
		args []string
	}{
		// The CIS file checks (fs/) judge owners and modes, which git
		// does not keep: on a checkout they would say who checked it out.
		// facts/files judges them on trees that set both, and the saved
		// documents below hold their reports still.
		{"rootfs-hardened", []string{"scan", "rootfs", hardened, "--params", params, "--skip-checks", "fs"}},
		{"rootfs-weak", []string{"scan", "rootfs", weak, "--params", params, "--skip-checks", "fs"}},
	}
	for _, f := range []string{"compliant-host", "noncompliant-image", "weak-facts"} {
		cases = append(cases, struct {
			name string
			args []string
		}{"facts-" + f, []string{"scan", "facts", "../../scan/testdata/" + f + ".json"}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{}, c.args...)
			for _, f := range stableFormats {
				args = append(args, "--report", f+"="+filepath.Join(dir, c.name+"."+f))
			}
			o := gpuhost(t, "", args...)
			if o.code == 2 && !strings.HasPrefix(c.name, "facts-") {
				t.Fatalf("exit 2: %s", o.stderr)
			}
			data, err := os.ReadFile(filepath.Join(dir, c.name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var rep reports.Report
			if err := json.Unmarshal(data, &rep); err != nil {
				t.Fatal(err)
			}
			pairs := []string{rep.Target.ScannedAt, "SCANNED_AT", rep.FactsDigest, "FACTS_DIGEST",
				`"tool_version": "` + rep.ToolVersion + `"`, `"tool_version": "TOOL_VERSION"`}
			// A scan of a tree names where the tree is; a saved document says
			// what it says, the path it was collected at included.
			if !strings.HasPrefix(c.name, "facts-") {
				pairs = append(pairs, repo, "REPO")
			}
			varying := strings.NewReplacer(pairs...)
			for _, f := range stableFormats {
				got, err := os.ReadFile(filepath.Join(dir, c.name+"."+f))
				if err != nil {
					t.Fatal(err)
				}
				testutil.Golden(t, filepath.Join("testdata", "stable", c.name+"."+f), []byte(varying.Replace(string(got))), *update)
			}
			if !testing.Short() {
				// What GitHub code scanning is given must be what it takes.
				testutil.ValidateSARIF(t, filepath.Join(dir, c.name+".sarif"))
			}
		})
	}
}
