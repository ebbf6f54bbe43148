package policies

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// packDirs are the folders of a checkout that hold the pack: policies/
// and each domain's folder beside its collector.
func packDirs() []string {
	dirs := []string{"policies"}
	for _, d := range Domains {
		dirs = append(dirs, d.Dir)
	}
	return dirs
}

// TestUpstreamOPA runs the pack through the opa binary the way a policy
// author would from a checkout: `opa test policies facts/secureboot …`
// must load the folders as they are (no fixture merging into data) and run every test we run,
// `opa check --strict` must find nothing and `opa fmt --list` nothing to
// reformat. The binary is the OPA release go.mod pins (make opa).
func TestUpstreamOPA(t *testing.T) {
	opa := testutil.BuiltTool(t, "opa", "opa")
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(opa, args...)
		cmd.Dir = root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	tests := 0
	for p, m := range loadModules(t) {
		if !isTestFile(p) {
			continue
		}
		for _, r := range m.Rules {
			if strings.HasPrefix(r.Head.Name.String(), "test_") {
				tests++
			}
		}
	}
	// The folders as they are, as a policy author would give them: a
	// domain's Rego sits in a folder of its own (facts/access/iam), apart
	// from the collector's fixtures, whose JSON opa would load as data.
	dirs := packDirs()
	out, err := run(append([]string{"test"}, dirs...)...)
	if want := fmt.Sprintf("PASS: %d/%d", tests, tests); err != nil || strings.TrimSpace(out) != want {
		t.Errorf("opa test %s: %v; want %q, got:\n%s", strings.Join(dirs, " "), err, want, out)
	}
	if out, err := run(append([]string{"check", "--strict"}, dirs...)...); err != nil || out != "" {
		t.Errorf("opa check --strict %s: %v\n%s", strings.Join(dirs, " "), err, out)
	}
	if out, err := run(append([]string{"fmt", "--list", "--fail"}, dirs...)...); err != nil || out != "" {
		t.Errorf("opa fmt --list %s would reformat: %v\n%s", strings.Join(dirs, " "), err, out)
	}
}

// TestRegal lints the pack with regal, the Rego linter, under the
// project's .regal/config.yaml (which says why each rule it relaxes is
// relaxed); make regal builds the version tools/regal pins.
func TestRegal(t *testing.T) {
	regal := testutil.BuiltTool(t, "regal", "regal")
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dirs := packDirs()
	cmd := exec.Command(regal, append([]string{"lint", "--no-color"}, dirs...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "No violations found") {
		t.Errorf("regal lint %s: %v\n%s", strings.Join(dirs, " "), err, out)
	}
}
