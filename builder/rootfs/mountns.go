package rootfs

// How the rootfs builder keeps mounts from outliving a build
//
// Provisioners need /proc, /sys, /dev and friends mounted inside the rootfs.
// A mount made in the build machine's own mount namespace outlives the process
// that made it: if the plugin is killed (SIGKILL, OOM, a crashed Packer), the
// mounts stay, the rootfs cannot be removed, and a later `rm -rf` of the
// output directory walks into the machine's real /dev. Cleanup steps cannot
// help, since a killed process runs none.
//
// So no mount is ever made in the build machine's namespace. A small holder
// process ("sh", started with CLONE_NEWNS|CLONE_NEWPID) first makes every mount
// in its new namespace private, so nothing propagates back to the machine, then
// makes the mounts, says "ready", and execs `cat`, which waits for its stdin to
// close. Commands run in the rootfs enter the holder's namespaces with
// `nsenter --target PID --mount --pid` and then chroot.
//
// The holder is PID 1 of its PID namespace. When it exits, the kernel kills
// every process left in that namespace (daemons a package started, a hung
// provisioner command); with no process left in the mount namespace, the
// kernel drops the namespace and all its mounts. The holder exits when:
//   - the build ends normally or is cancelled: the mount step's Cleanup
//     unmounts in reverse order (lazily when busy), then closes the holder's stdin;
//   - the plugin dies in any way: the kernel closes the plugin's end of the pipe,
//     so `cat` sees end of file, and Pdeathsig sends the holder SIGKILL as well.
//
// mmdebstrap runs the same way, as PID 1 of its own namespaces, so the mounts
// it makes during the bootstrap cannot leak either.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// holderStopTimeout bounds how long Close waits for the holder to exit after
// its stdin is closed, before it kills it.
const holderStopTimeout = 10 * time.Second

// mountSpec says how one mount is made.
type mountSpec struct {
	fstype, source, opts string
	// bind, when set, is a host path bind-mounted instead.
	bind string
}

// mountPlan is one mount at an absolute host path inside the rootfs.
type mountPlan struct {
	spec   mountSpec
	target string
}

// mountNS is a running holder and the mounts it made, in order.
type mountNS struct {
	root   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	done   chan struct{}
	stderr *syncBuffer
	mounts []string

	closeOnce sync.Once
	closeErr  error
}

var sealOnce sync.Once

// sealInheritedFDs marks every descriptor above stderr close-on-exec. Packer
// starts the plugin with descriptors open that are not (a /dev/null, a pipe
// back to Packer); without this, every child inherits them: a long-lived
// holder would keep Packer's pipe open, and mmdebstrap's own pipes land on
// descriptors above 9, which apt's "cat >&N" hook cannot name under dash.
// Go opens its own descriptors close-on-exec, so nothing of ours is lost.
func sealInheritedFDs() {
	sealOnce.Do(func() {
		if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
			log.Printf("marking inherited descriptors close-on-exec: %v", err)
		}
	})
}

// privateNSAttr starts a child as PID 1 of new mount and PID namespaces, and
// kills it when the thread that started it dies.
func privateNSAttr() *syscall.SysProcAttr {
	sealInheritedFDs()
	return &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
		Pdeathsig:  syscall.SIGKILL,
		Setpgid:    true,
	}
}

// makePrivate is the shell prologue of every process started with
// privateNSAttr: a new mount namespace starts as a copy whose mounts still
// propagate to the machine's, so they must be made private before any mount.
const makePrivate = "mount --make-rprivate / || exit 97\n"

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// planMounts turns mount paths (as in the rootfs) and an optional apt cache
// directory into plans under root. It creates missing target directories
// through os.Root, so a symlink in the rootfs cannot send a mount outside it,
// and refuses targets that are symlinks, since mount(8) would follow them
// from the machine's root.
func planMounts(root string, paths []string, aptCache string) ([]mountPlan, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("opening rootfs %s: %w", root, err)
	}
	defer r.Close()
	type want struct {
		rel  string
		spec mountSpec
	}
	var wants []want
	for _, p := range paths {
		spec, ok := mountKinds[p]
		if !ok {
			return nil, fmt.Errorf("mounts: unsupported %q", p)
		}
		wants = append(wants, want{strings.TrimPrefix(p, "/"), spec})
	}
	if aptCache != "" {
		wants = append(wants, want{"var/cache/apt/archives", mountSpec{bind: aptCache}})
	}
	var plans []mountPlan
	for _, w := range wants {
		if err := r.MkdirAll(w.rel, 0o755); err != nil {
			return nil, fmt.Errorf("creating mount point /%s in %s: %w", w.rel, root, err)
		}
		// Every component must be a real directory.
		cur := ""
		for _, part := range strings.Split(w.rel, "/") {
			cur = filepath.Join(cur, part)
			fi, err := r.Lstat(cur)
			if err != nil {
				return nil, fmt.Errorf("mount point /%s in %s: %w", w.rel, root, err)
			}
			if !fi.IsDir() {
				return nil, fmt.Errorf("mount point /%s in %s: /%s is not a directory", w.rel, root, cur)
			}
		}
		plans = append(plans, mountPlan{spec: w.spec, target: filepath.Join(root, w.rel)})
	}
	return plans, nil
}

// mountScript is the holder's shell script for plans.
func mountScript(plans []mountPlan) string {
	var b strings.Builder
	b.WriteString("set -eu\n")
	b.WriteString(makePrivate)
	for _, p := range plans {
		if p.spec.bind != "" {
			fmt.Fprintf(&b, "mount --bind %s %s\n", shellQuote(p.spec.bind), shellQuote(p.target))
			continue
		}
		fmt.Fprintf(&b, "mount -t %s -o %s %s %s\n", p.spec.fstype, shellQuote(p.spec.opts), p.spec.source, shellQuote(p.target))
	}
	b.WriteString("echo ready\nexec cat >/dev/null\n")
	return b.String()
}

// startMountNS starts a holder that makes plans under root. It returns once
// every mount is made, or with the holder's error output when one fails (the
// holder is gone then, and with it any mount it had made).
func startMountNS(ctx context.Context, root string, plans []mountPlan) (*mountNS, error) {
	cmd := exec.Command("/bin/sh", "-c", mountScript(plans))
	cmd.SysProcAttr = privateNSAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errBuf := &syncBuffer{}
	cmd.Stderr = errBuf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the mount namespace holder: %w", err)
	}
	m := &mountNS{root: root, cmd: cmd, stdin: stdin, done: make(chan struct{}), stderr: errBuf}
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- line == "ready\n"
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		_ = cmd.Wait()
		close(m.done)
	}()
	select {
	case ok := <-ready:
		if ok {
			for _, p := range plans {
				m.mounts = append(m.mounts, p.target)
			}
			return m, nil
		}
		<-m.done
		return nil, fmt.Errorf("mounting in %s: %s (%v)", root, strings.TrimSpace(errBuf.String()), cmd.ProcessState)
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-m.done
		return nil, ctx.Err()
	}
}

// PID is the holder's process id, as the build machine sees it.
func (m *mountNS) PID() int { return m.cmd.Process.Pid }

// Wrap returns a shell command that runs command, a whole shell command line,
// in the holder's namespaces; it is the CmdWrapper of the chroot communicator.
func (m *mountNS) Wrap(command string) (string, error) {
	return fmt.Sprintf("nsenter --target %d --mount --pid -- /bin/sh -c %s", m.PID(), shellQuote(command)), nil
}

// Mounts returns the mounted paths, in the order they were made.
func (m *mountNS) Mounts() []string { return append([]string(nil), m.mounts...) }

// Close unmounts in reverse order (lazily when a mount is busy), stops the
// holder, which kills any process still in its namespaces, and then checks
// that the build machine holds no mount under the rootfs. It is safe to call
// more than once.
func (m *mountNS) Close() error {
	m.closeOnce.Do(func() { m.closeErr = m.close() })
	return m.closeErr
}

func (m *mountNS) close() error {
	var errs []error
	alive := true
	select {
	case <-m.done:
		alive = false
	default:
	}
	for i := len(m.mounts) - 1; i >= 0 && alive; i-- {
		t := m.mounts[i]
		if out, err := m.nsExec("umount", t); err != nil {
			if out2, err2 := m.nsExec("umount", "-l", t); err2 != nil {
				errs = append(errs, fmt.Errorf("unmounting %s: %s; lazily: %s", t, out, out2))
			}
		}
	}
	_ = m.stdin.Close()
	select {
	case <-m.done:
	case <-time.After(holderStopTimeout):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	if left, err := mountsUnder(m.root); err != nil {
		errs = append(errs, err)
	} else if len(left) > 0 {
		errs = append(errs, fmt.Errorf("mounts left under %s: %s", m.root, strings.Join(left, ", ")))
	}
	return errors.Join(errs...)
}

// nsExec runs a program inside the holder's mount namespace.
func (m *mountNS) nsExec(args ...string) (string, error) {
	full := append([]string{"--target", strconv.Itoa(m.PID()), "--mount", "--"}, args...)
	out, err := exec.Command("nsenter", full...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// mountsUnder returns the mount points at or under dir in this process's
// mount namespace, read from /proc/self/mountinfo.
func mountsUnder(dir string) ([]string, error) {
	return mountsUnderIn("/proc/self/mountinfo", dir)
}

func mountsUnderIn(mountinfo, dir string) ([]string, error) {
	data, err := readBounded(mountinfo)
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMountinfo(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for space and friends)
// the kernel writes in mountinfo paths.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.buf.Len() > 64<<10 {
		return len(p), nil // keep the start; it names the failure
	}
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
