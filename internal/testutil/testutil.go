// Package testutil holds what tests of several packages need to run real
// third-party parts: finding a tool, requiring root, and starting a daemon
// that is stopped by its own PID when the test ends.
//
// A missing tool skips a test on a developer's machine, where `make check`
// runs without root or apt, and fails it under CI=true, where the Makefile
// has installed every package the tests name. A test therefore cannot pass
// in CI without having run.
package testutil

import (
	"bufio"
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
	"testing"
	"time"
)

// InCI reports whether the tests run under CI, where nothing may be skipped
// for want of a tool.
func InCI() bool { return os.Getenv("CI") != "" }

// Tool returns the path of the named program, or skips the test (fails it
// under CI) naming the Debian package that provides it.
func Tool(t testing.TB, name, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := dir + "/" + name; isExec(p) {
			return p
		}
	}
	missing(t, fmt.Sprintf("%s not found (Debian package %s)", name, debianPackage))
	return ""
}

// Root skips the test (fails it under CI) unless it runs as root.
func Root(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, "needs root (network namespaces, daemons bound to privileged paths)")
	}
}

func missing(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatalf("CI is set and the test cannot run: %s", why)
	}
	t.Skipf("%s; under CI this fails", why)
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// Proc is a process a test started. Its output is kept, and it is killed,
// by PID and its process group only, when the test ends.
type Proc struct {
	Cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

// Start runs cmd in a process group of its own and registers its cleanup.
func Start(t testing.TB, cmd *exec.Cmd) *Proc {
	t.Helper()
	p := &Proc{Cmd: cmd, done: make(chan struct{})}
	cmd.Stdout = (*lockedWriter)(p)
	cmd.Stderr = (*lockedWriter)(p)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
			return
		default:
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

type lockedWriter Proc

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(b)
}

// Output returns what the process has written so far, stdout and stderr
// interleaved.
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// WaitFor waits until ready returns true, and fails the test as soon as the
// process exits first or the timeout passes, with the process's output.
func (p *Proc) WaitFor(t testing.TB, timeout time.Duration, what string, ready func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if ready() {
			return
		}
		select {
		case <-p.done:
			if ready() {
				return
			}
			t.Fatalf("%s exited (%v) before %s; output:\n%s", p.Cmd.Path, p.err, what, p.Output())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s after %s; output:\n%s", p.Cmd.Path, what, timeout, p.Output())
		}
	}
}

// WaitLine waits for a line of output containing substr (see WaitFor).
func (p *Proc) WaitLine(t testing.TB, timeout time.Duration, substr string) {
	t.Helper()
	p.WaitFor(t, timeout, fmt.Sprintf("output line %q", substr), func() bool {
		return hasLine(p.Output(), substr)
	})
}

func hasLine(out, substr string) bool {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			return true
		}
	}
	return false
}

// Netns runs the test's daemons in a network namespace of its own: it
// returns a command prefix ("ip netns exec NAME") and removes the namespace
// when the test ends. The namespace has only its loopback, brought up.
func Netns(t testing.TB) []string {
	t.Helper()
	Root(t)
	ip := Tool(t, "ip", "iproute2")
	name := fmt.Sprintf("gpuhost-test-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9)
	if out, err := exec.Command(ip, "netns", "add", name).CombinedOutput(); err != nil {
		missing(t, fmt.Sprintf("ip netns add: %v: %s", err, out))
	}
	t.Cleanup(func() { _ = exec.Command(ip, "netns", "delete", name).Run() })
	if out, err := exec.Command(ip, "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("bringing up lo in %s: %v: %s", name, err, out)
	}
	return []string{ip, "netns", "exec", name}
}

// Run runs a command to completion with a bound on its time, failing the
// test with its output when it fails.
func Run(t testing.TB, timeout time.Duration, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// BuiltTool returns the path of a tool that the Makefile builds or installs
// into the repository's bin/ (make GOAL), or of the same name on PATH, or
// skips the test (fails it under CI) naming the goal that provides it.
func BuiltTool(t testing.TB, name, goal string) string {
	t.Helper()
	if root, err := RepoRoot(); err == nil {
		if p := filepath.Join(root, "bin", name); isExec(p) {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	missing(t, fmt.Sprintf("%s not found in bin/ or on PATH (make %s installs it)", name, goal))
	return ""
}

// LeanAgent is gpuhost-agent as a test runs it: GPUHOST_AGENT when set,
// else the lean build of ./cmd/gpuhost (what make build installs as
// bin/gpuhost-agent) made into a temporary directory of t's, so that a
// test of the agent never depends on an earlier make build. Extra build
// tags (nvmlmock) always build it, since GPUHOST_AGENT has none.
func LeanAgent(t testing.TB, tags ...string) string {
	t.Helper()
	if p := os.Getenv("GPUHOST_AGENT"); p != "" && len(tags) == 0 {
		return p
	}
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "gpuhost-agent")
	cmd := exec.Command("go", "build", "-trimpath", "-tags", strings.Join(append([]string{"lean"}, tags...), ","), "-o", out, "./cmd/gpuhost")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the lean agent: %v\n%s", err, b)
	}
	return out
}

// RepoRoot is the directory holding the module's go.mod, found upward from
// the working directory (a test runs in its package's folder).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// File skips the test (fails it under CI) unless path exists, naming the
// Debian package that installs it.
func File(t testing.TB, path, debianPackage string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		missing(t, fmt.Sprintf("%s not found (Debian package %s)", path, debianPackage))
	}
	return path
}
