package testutil

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// FreePort returns a loopback port nothing listens on now. Another process
// may take it before the test's daemon binds it.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// PrivateRun returns unshare's arguments to run argv in a mount namespace
// whose /run is the directory run, holding the /run/sshd Debian's sshd
// insists on, so the machine's own /run is never touched. unshare and sh
// exec, so the process's pid is that of the program.
func PrivateRun(run string, argv ...string) []string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	script := fmt.Sprintf("mount --make-rprivate / && mount --bind '%s' /run && mkdir -p -m 0755 /run/sshd && exec %s", run, strings.Join(quoted, " "))
	return []string{"--mount", "sh", "-c", script}
}

// NginxTempPaths are the http-level directives that keep nginx's temporary
// files in dir instead of /var/lib/nginx.
func NginxTempPaths(dir string) string {
	var b strings.Builder
	for _, k := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&b, "\t%s_temp_path %s;\n", k, filepath.Join(dir, k))
	}
	return b.String()
}

// DialNetns connects to addr from inside the network namespace name (one
// Netns made), so that a test reaches a daemon there without a veth pair
// or a route on the machine.
func DialNetns(name, network, addr string) (net.Conn, error) {
	return DialNetnsWithin(name, network, addr, 10*time.Second)
}

// DialNetnsWithin is DialNetns giving up after timeout: a SYN a firewall
// drops shows as the timeout.
func DialNetnsWithin(name, network, addr string, timeout time.Duration) (net.Conn, error) {
	var conn net.Conn
	err := InNetns(name, func() error {
		var err error
		conn, err = net.DialTimeout(network, addr, timeout)
		return err
	})
	if errors.Is(err, ErrNetns) && conn != nil {
		conn.Close()
		conn = nil
	}
	return conn, err
}

// ListenNetns listens on addr inside the network namespace name.
func ListenNetns(name, network, addr string) (net.Listener, error) {
	var l net.Listener
	err := InNetns(name, func() error {
		var err error
		l, err = net.Listen(network, addr)
		return err
	})
	if errors.Is(err, ErrNetns) && l != nil {
		l.Close()
		l = nil
	}
	return l, err
}

// InNetns runs fn on a thread switched into the network namespace name and
// back. A socket stays in the namespace it was made in, so fn makes
// sockets there; a thread that cannot come back stays locked, and the
// runtime ends it with the goroutine instead of running other code in the
// namespace. fn's error is returned as it is, so a caller can tell a
// refused connection from a namespace that could not be entered.
func InNetns(name string, fn func() error) error {
	runtime.LockOSThread()
	own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("%w: %w", ErrNetns, err)
	}
	defer own.Close()
	target, err := os.Open(filepath.Join("/run/netns", name))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("%w: %w", ErrNetns, err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("%w: entering %s: %w", ErrNetns, name, err)
	}
	fnErr := fn()
	if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("%w: leaving %s: %w", ErrNetns, name, err)
	}
	runtime.UnlockOSThread()
	return fnErr
}

// ErrNetns is wrapped by InNetns's errors that are about the namespace,
// not about what fn did inside it.
var ErrNetns = errors.New("network namespace")
