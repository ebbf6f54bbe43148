package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartWaitsForALineAndKillsByPID(t *testing.T) {
	sh := Tool(t, "sh", "dash")
	var pid int
	t.Run("run", func(t *testing.T) {
		p := Start(t, exec.Command(sh, "-c", "echo ready; exec sleep 60"))
		p.WaitLine(t, 10*time.Second, "ready")
		pid = p.Cmd.Process.Pid
		if p.Exited() {
			t.Fatal("the process exited early")
		}
	})
	// The subtest's cleanup has run: the process and its group are gone.
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("process %d still runs after its test ended", pid)
	}
}

func TestExitedAndOutputSurviveTheExit(t *testing.T) {
	sh := Tool(t, "sh", "dash")
	p := Start(t, exec.Command(sh, "-c", "echo bye; exit 3"))
	start := time.Now()
	for !p.Exited() && time.Since(start) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if !p.Exited() {
		t.Fatal("a process that exits at once was not seen to exit")
	}
	if !hasLine(p.Output(), "bye") {
		t.Fatalf("output lost: %q", p.Output())
	}
}

// TestValidateSARIFSeesErrors holds the Multitool check to failing: a log
// whose artifact URI is an absolute path under a uriBaseId is an error the
// Multitool reports (SARIF1004), and multitoolFindings must count it.
func TestValidateSARIFSeesErrors(t *testing.T) {
	tool := BuiltTool(t, "sarif-multitool", "sarif-multitool")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.sarif")
	log := `{"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0", "runs": [{
  "tool": {"driver": {"name": "t", "version": "1.0", "informationUri": "https://example.com/", "rules": [{"id": "R1", "shortDescription": {"text": "r"}}]}},
  "originalUriBaseIds": {"ROOT": {"uri": "file:///srv/"}},
  "results": [{"ruleId": "R1", "ruleIndex": 0, "level": "error", "message": {"text": "x."},
    "locations": [{"physicalLocation": {"artifactLocation": {"uri": "/etc/passwd", "uriBaseId": "ROOT"}, "region": {"startLine": 1}}}]}]}]}`
	if err := os.WriteFile(bad, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "validation.sarif")
	cmd := exec.Command(tool, "validate", bad, "--output", out, "--log", "ForceOverwrite")
	cmd.Env = append(os.Environ(), "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	errs, _, err := multitoolFindings(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) == 0 || !strings.Contains(strings.Join(errs, "\n"), "SARIF1004") {
		t.Errorf("errors %q, want SARIF1004", errs)
	}
}
