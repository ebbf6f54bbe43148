package testutil

import (
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
// or a route on the machine. The socket is made on a thread switched into
// the namespace and back; a socket stays in the namespace it was made in.
func DialNetns(name, network, addr string) (net.Conn, error) {
	runtime.LockOSThread()
	own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer own.Close()
	target, err := os.Open(filepath.Join("/run/netns", name))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("entering network namespace %s: %w", name, err)
	}
	conn, dialErr := net.DialTimeout(network, addr, 10*time.Second)
	if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked, so the runtime ends it with the
		// goroutine instead of running other code in the namespace.
		if conn != nil {
			conn.Close()
		}
		return nil, fmt.Errorf("leaving network namespace %s: %w", name, err)
	}
	runtime.UnlockOSThread()
	return conn, dialErr
}
