package qemu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// swtpm is the software TPM 2.0 of one VM: a swtpm process serving its
// control channel on a Unix socket that QEMU's tpm emulator backend
// connects to, its state in a directory that outlives it.
type swtpm struct {
	cmd    *exec.Cmd
	sock   string
	done   chan struct{}
	stderr *bytes.Buffer
	once   sync.Once
}

// maxSocketPath is what a Unix socket's address holds (sun_path, 108
// bytes with its NUL).
const maxSocketPath = 107

// startSWTPM starts swtpm with its state in stateDir and its socket, log
// and pidfile in dir, and waits for both: swtpm may serve the socket a
// moment before it writes the pidfile, and a caller that reads the pidfile
// right after start must find it. --terminate ends it when
// QEMU closes the connection; Pdeathsig when this process dies; stop kills
// it by the PID this process started, as for QEMU.
func startSWTPM(ctx context.Context, bin, stateDir, dir string) (*swtpm, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("TPM state %s: %w", stateDir, err)
	}
	sock := filepath.Join(dir, "swtpm.sock")
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("the swtpm socket %s is longer than the %d bytes a Unix socket's path may be; use a shorter Dir", sock, maxSocketPath)
	}
	pidfile := filepath.Join(dir, "swtpm.pid")
	for _, f := range []string{sock, pidfile} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	t := &swtpm{sock: sock, done: make(chan struct{}), stderr: &bytes.Buffer{}}
	t.cmd = exec.Command(bin, "socket", "--tpm2",
		"--tpmstate", "dir="+stateDir,
		"--ctrl", "type=unixio,path="+sock,
		"--pid", "file="+pidfile,
		"--log", "file="+filepath.Join(dir, "swtpm.log")+",level=1",
		"--terminate")
	t.cmd.Stdout, t.cmd.Stderr = t.stderr, t.stderr
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := t.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		_ = t.cmd.Wait()
		close(t.done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ready(sock, pidfile) {
			return t, nil
		}
		select {
		case <-t.done:
			return nil, fmt.Errorf("swtpm (state %s) exited before it served %s: %s", stateDir, sock, strings.TrimSpace(t.stderr.String()))
		case <-ctx.Done():
			t.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.stop()
			return nil, fmt.Errorf("swtpm (state %s) did not serve %s and write %s within 10 s", stateDir, sock, pidfile)
		}
	}
}

// ready says whether swtpm serves its socket and has written its pid.
func ready(sock, pidfile string) bool {
	if _, err := os.Stat(sock); err != nil {
		return false
	}
	b, err := os.ReadFile(pidfile)
	return err == nil && len(bytes.TrimSpace(b)) > 0
}

// stop kills the swtpm by its PID, SIGTERM then SIGKILL, and waits for it
// to be gone; nothing on a nil swtpm.
func (t *swtpm) stop() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		select {
		case <-t.done:
			return
		default:
		}
		_ = syscall.Kill(t.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-t.done:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(t.cmd.Process.Pid, syscall.SIGKILL)
			<-t.done
		}
	})
}
