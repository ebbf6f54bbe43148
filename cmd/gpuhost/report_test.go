package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

const diffData = "../../render/diff/testdata/"

// runCommand executes one command built by its constructor, as run() would
// once it is registered, and returns the exit code run() would give.
func runCommand(t *testing.T, build func(*app) *cobra.Command, args ...string) outcome {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}
	a.log = slog.New(slog.NewTextHandler(&errOut, nil)) // root's PersistentPreRunE sets it in run()
	cmd := build(a)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	code := 0
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		} else {
			code = 2
		}
		errOut.WriteString(err.Error())
	}
	return outcome{code, out.String(), errOut.String()}
}

func TestReportDiff(t *testing.T) {
	report := (*app).reportCommand

	o := runCommand(t, report, "diff", diffData+"old.json", diffData+"fixed.json")
	if o.code != 0 {
		t.Fatalf("a fix only: exit %d, want 0\n%s%s", o.code, o.stdout, o.stderr)
	}
	if !strings.Contains(o.stdout, "FIXED (1)") || !strings.Contains(o.stdout, "GH-SSH-002") {
		t.Errorf("the fix is not shown as fixed:\n%s", o.stdout)
	}

	o = runCommand(t, report, "diff", diffData+"old.json", diffData+"new.json", "--format", "json")
	if o.code != 1 {
		t.Fatalf("new failures: exit %d, want 1\n%s", o.code, o.stderr)
	}
	var d struct {
		NewFailures []struct{ ID string } `json:"new_failures"`
		Fixed       []struct{ ID string } `json:"fixed"`
	}
	if err := json.Unmarshal([]byte(o.stdout), &d); err != nil {
		t.Fatalf("--format json: %v\n%s", err, o.stdout)
	}
	if len(d.NewFailures) != 2 || d.NewFailures[0].ID != "GH-TLS-001" || len(d.Fixed) != 2 {
		t.Errorf("json diff: %+v", d)
	}

	o = runCommand(t, report, "diff", diffData+"old.json", diffData+"new.json", "--format", "markdown")
	if o.code != 1 || !strings.HasPrefix(o.stdout, "# gpuhost report diff") {
		t.Errorf("markdown: exit %d, output %q", o.code, o.stdout)
	}
}

func TestReportDiffUnreadable(t *testing.T) {
	report := (*app).reportCommand
	bad := filepath.Join(t.TempDir(), "facts.json")
	if err := os.WriteFile(bad, []byte(`{"schema":"gpuhost.facts/v1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"missing file":   {"diff", diffData + "old.json", "nope.json"},
		"not a report":   {"diff", bad, diffData + "old.json"},
		"unknown format": {"diff", diffData + "old.json", diffData + "new.json", "--format", "html"},
		"one argument":   {"diff", diffData + "old.json"},
	} {
		if o := runCommand(t, report, args...); o.code != 2 {
			t.Errorf("%s: exit %d, want 2\n%s", name, o.code, o.stderr)
		}
	}
	if o := runCommand(t, report, "diff", bad, diffData+"old.json"); !strings.Contains(o.stderr, bad) {
		t.Errorf("error does not name the file: %s", o.stderr)
	}
}
