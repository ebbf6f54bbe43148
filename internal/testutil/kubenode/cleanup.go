package kubenode

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const cgroupFS = "/sys/fs/cgroup"

// makeCgroupRoot makes the cgroup the kubelet puts its pods under, in
// every cgroup v1 hierarchy (the kubelet refuses a root missing from any),
// and removes it, with every cgroup made under it, when the test ends.
func makeCgroupRoot(t *testing.T, name string) string {
	t.Helper()
	entries, err := os.ReadDir(cgroupFS)
	if err != nil {
		t.Fatal(err)
	}
	var made []string
	for _, e := range entries {
		// unified, cgroup v2's hierarchy beside v1's, too: the kubelet
		// makes its pods' cgroups there as well.
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(cgroupFS, e.Name(), name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatalf("making the node's cgroup: %v", err)
		}
		made = append(made, d)
		if e.Name() == "cpuset" {
			// A new cpuset has no CPUs or memory nodes until given its
			// parent's.
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(cgroupFS, "cpuset", f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, f), v, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	t.Cleanup(func() {
		for _, d := range made {
			removeCgroupTree(t, d)
		}
	})
	return "/" + name
}

// removeCgroupTree removes the cgroup d and those under it, deepest first,
// waiting briefly for processes ending in them.
func removeCgroupTree(t *testing.T, d string) {
	var dirs []string
	_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.Reverse(dirs)
	for _, p := range dirs {
		var err error
		for range 50 {
			if err = os.Remove(p); err == nil || os.IsNotExist(err) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil && !os.IsNotExist(err) {
			t.Errorf("removing cgroup %s: %v", p, err)
		}
	}
}

// stopContainers kills what runs in the node's pods (every process in a
// cgroup under the node's root) and containerd's shims (by the PIDs they
// recorded under state), so that nothing the node started outlives it.
func stopContainers(t *testing.T, cgroupRoot, containerdDir string) {
	var pids []int
	_ = filepath.WalkDir(filepath.Join(cgroupFS, "pids", cgroupRoot), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && e.Name() == "cgroup.procs" {
			pids = append(pids, readPIDs(p)...)
		}
		return nil
	})
	shims, _ := filepath.Glob(filepath.Join(containerdDir, "state", "io.containerd.runtime.v2.task", "*", "*", "shim.pid"))
	for _, f := range shims {
		pids = append(pids, readPIDs(f)...)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
			t.Errorf("killing %d: %v", pid, err)
		}
	}
}

func readPIDs(file string) []int {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	var pids []int
	s := bufio.NewScanner(f)
	for s.Scan() {
		if pid, err := strconv.Atoi(strings.TrimSpace(s.Text())); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// fixedPaths are where the kubelet and containerd write whatever their
// configuration says: the device plugins' socket, the legacy links to
// container logs, the shims' sockets and runc's state.
var fixedPaths = []string{"/var/lib/kubelet", "/var/log/containers", "/run/containerd"}

// fixedPathsLock is held by every test whose namespace shadows the fixed
// paths: shared while its mounts stand, exclusive while it makes or
// removes the directories they stand on. Tests run in namespaces of their
// own side by side, but a directory is one for all of them: removing one
// that another test has mounted over takes that test's mount away (Linux
// detaches a removed mount point's mounts in every namespace), so only the
// last test out removes what any of them made. The file beside it lists
// what was made.
var fixedPathsLock = filepath.Join(os.TempDir(), "gpuhost-kubenode-fixed-paths.lock")

// shadowFixedPaths mounts an empty tmpfs over each of fixedPaths, in the
// test's own mount namespace, so that what the node writes there stays
// there and goes with the namespace. A directory that had to be made for
// a mount is removed by the last test that shadows it.
func shadowFixedPaths(t *testing.T) {
	t.Helper()
	lock, err := os.OpenFile(fixedPathsLock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	made := fixedPathsLock + ".made"
	// Registered before the unmounts, so it runs after them.
	t.Cleanup(func() {
		defer lock.Close()
		if unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			return // another test still stands on them; the last one removes them
		}
		data, err := os.ReadFile(made)
		if err != nil {
			return
		}
		for _, p := range strings.Fields(string(data)) {
			if slices.Contains(fixedPaths, p) {
				if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
					t.Errorf("removing %s: %v", p, err)
				}
			}
		}
		if err := os.Remove(made); err != nil {
			t.Errorf("removing %s: %v", made, err)
		}
	})
	for _, p := range fixedPaths {
		if _, err := os.Stat(p); os.IsNotExist(err) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(made, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err == nil {
				_, err = f.WriteString(p + "\n")
				f.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
			t.Fatalf("mounting a tmpfs over %s: %v", p, err)
		}
		t.Cleanup(func() {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
				t.Errorf("unmounting %s: %v", p, err)
			}
		})
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
}

// unmountUnder detaches every mount below dir (the containers' root
// filesystems, the kubelet's secret and projected volumes), deepest first,
// before the test's directory is removed: removing through a mount would
// reach what it shows.
func unmountUnder(t *testing.T, dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Error(err)
		return
	}
	var points []string
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		p := unescapeMount(f[4])
		if strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			t.Errorf("unmounting %s: %v", p, err)
		}
	}
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
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
