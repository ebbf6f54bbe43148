package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestSignalEndsAScan: SIGTERM or SIGINT ends `scan facts` within a second,
// even while it waits on a stdin that sends nothing, with exit 2 (the scan
// did not finish, so it proves nothing).
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
			// Let it compile the pack and block on stdin.
			select {
			case err := <-exited:
				t.Fatalf("gpuhost exited before the signal: %v", err)
			case <-time.After(2 * time.Second):
			}
			sent := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				took := time.Since(sent)
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 2 {
					t.Errorf("after %v: %v; want exit 2", sig, err)
				}
				if took > time.Second {
					t.Errorf("took %s to end after %v; want under a second", took, sig)
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 10 s after %v", sig)
			}
		})
	}
}
