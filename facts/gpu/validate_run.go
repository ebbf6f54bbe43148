package gpu

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// maxCommandOutput bounds what a validation step keeps of a program's
// output: nvidia-smi -L for 256 GPUs, or vectorAdd's few lines, fit well
// within it, and a program that prints without end is cut off.
const maxCommandOutput = 256 << 10

// Runner runs a program of the host being validated.
type Runner interface {
	// Run runs path, a path in the host's own tree, with args and env
	// added to a plain environment, and returns its output (stdout and
	// stderr together, bounded). A non-nil error means it could not start,
	// exited non-zero, or was stopped when ctx ended.
	Run(ctx context.Context, env []string, path string, args ...string) ([]byte, error)
}

type hostRunner struct{ root string }

// NewHostRunner runs programs of the host whose root is mounted at root:
// directly when root is "/", and chrooted into root otherwise, so that a
// program started from a pod finds the host's libraries (libcuda), devices
// and sockets (containerd's) where it expects them.
func NewHostRunner(root string) Runner { return hostRunner{root: filepath.Clean(root)} }

func (r hostRunner) Run(ctx context.Context, env []string, path string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}, env...)
	cmd.Dir = "/"
	// Its own process group, so that ending it ends what it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if r.root != "/" {
		cmd.SysProcAttr.Chroot = r.root
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A pipe held open by something it started must not hold Wait forever.
	cmd.WaitDelay = 2 * time.Second
	out := &cappedBuffer{max: maxCommandOutput}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	if err == nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
	}
	return out.buf.Bytes(), err
}

// tail returns the last lines of a program's output as one line, for a
// reason: the end is where programs say what went wrong.
func tail(out []byte, lines int) string {
	text := strings.TrimSpace(strings.ToValidUTF8(string(out), "?"))
	if text == "" {
		return "no output"
	}
	all := strings.Split(text, "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	for i, l := range all {
		all[i] = strings.TrimSpace(l)
	}
	const maxTail = 600
	s := strings.Join(all, " | ")
	if len(s) > maxTail {
		s = "..." + s[len(s)-maxTail:]
	}
	return strings.ToValidUTF8(s, "")
}

// exitText says how a program ended: its exit status, or that it could not
// start.
func exitText(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.String()
	}
	return err.Error()
}

// hasLine reports whether out holds a line that is want, spaces aside.
func hasLine(out []byte, want string) bool {
	for line := range bytes.Lines(out) {
		if strings.TrimSpace(string(line)) == want {
			return true
		}
	}
	return false
}
