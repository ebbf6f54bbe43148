package testutil

import (
	"os/exec"
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
