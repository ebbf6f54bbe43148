package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalEndsAScan: SIGTERM or SIGINT ends `scan facts` while it waits
// on a stdin that sends nothing, with exit 2 (the scan did not finish, so
// it proves nothing). The signal goes once the process is blocked reading
// stdin, so it meets the handler the scan installed, not Go's default.
func TestSignalEndsAScan(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			self, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(self, "scan", "facts", "--params", params)
			cmd.Env = append(os.Environ(), asCLI+"=1")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer cmd.Process.Kill()
			if err := waitReadingStdin(cmd.Process.Pid, exited); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			// The bound only keeps a hung process from hanging the test.
			select {
			case err := <-exited:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 2 {
					t.Errorf("after %v: %v; want exit 2", sig, err)
				}
			case <-time.After(time.Minute):
				t.Fatalf("still running a minute after %v", sig)
			}
		})
	}
}

// waitReadingStdin returns once one of pid's threads is in read(2) on file
// descriptor 0, as /proc/PID/task/TID/syscall shows it (x86-64 and arm64
// number read 0 and 63), or an error once the process exits or a minute
// passes. Where the kernel shows no thread's system call (no
// CONFIG_HAVE_ARCH_TRACEHOOK, or ptrace refused), it falls back to a
// pause of two seconds.
func waitReadingStdin(pid int, exited <-chan error) error {
	deadline := time.After(time.Minute)
	blind := time.After(2 * time.Second)
	seen := false
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("gpuhost exited before it read stdin: %v", err)
		case <-deadline:
			return errors.New("gpuhost did not read stdin within a minute")
		case <-blind:
			if !seen {
				return nil
			}
			continue
		case <-tick.C:
		}
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", pid))
		for _, f := range tasks {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			seen = true
			fields := strings.Fields(string(data))
			if len(fields) >= 2 && (fields[0] == "0" || fields[0] == "63") && fields[1] == "0x0" {
				return nil
			}
		}
	}
}
