package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/gpuhost/gpuhost/agent"
)

// terminalSafe fails when out holds a control or format character other
// than a newline: an escape sequence, a tab that shifts the columns, a bidi
// override that makes text read other than it is.
func terminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
			t.Errorf("%s: %U reached the terminal:\n%q", what, r, out)
			return
		}
	}
}

// A pack from --policy is untrusted: policy list shows its text inert.
func TestPolicyListEscapesPackText(t *testing.T) {
	dir := t.TempDir()
	rego := `# METADATA
# title: "\e[2J\e[31mPASS\e[0m\tsafe\u202egnp.exe\nsecond line"
# custom:
#   id: "EX-001\e[8m"
#   severity: low
#   remediation: none
#   targets: [rootfs]
package gpuhost.example.one

deny contains "x" if input.never
`
	if err := os.WriteFile(filepath.Join(dir, "one.rego"), []byte(rego), 0o644); err != nil {
		t.Fatal(err)
	}
	o := gpuhost(t, "", "policy", "list", "--policy", dir)
	if o.code != 0 || !strings.Contains(o.stdout, "[31mPASS[0m safegnp.exe second line") {
		t.Fatalf("policy list: exit %d\n%q%s", o.code, o.stdout, o.stderr)
	}
	terminalSafe(t, "policy list", o.stdout)
}

// A run's target comes from the scanned host: history shows it inert.
func TestHistoryEscapesTarget(t *testing.T) {
	db := filepath.Join(t.TempDir(), "history.db")
	st, err := agent.OpenStore(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Insert(context.Background(), &agent.RunRecord{StartedAt: time.Now(), Target: "host:\x1b[2Jnode\t01\u202e", Error: "collector\x1b[31m failed"}, agent.Retention{})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	o := runCommand(t, (*app).historyCommand, "--db", db)
	if o.code != 0 || !strings.Contains(o.stdout, "(no report: collector[31m failed)") {
		t.Fatalf("history: exit %d\n%q%s", o.code, o.stdout, o.stderr)
	}
	terminalSafe(t, "history", o.stdout)
}
