package rootfs

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// helperEnv makes the test binary act as a plugin that mounts a fake rootfs
// and then waits to be killed.
const helperEnv = "GPUHOST_TEST_MOUNT_HELPER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(mountHelper(dir))
	}
	os.Exit(m.Run())
}

func mountHelper(dir string) int {
	plans, err := planMounts(dir, defaultMounts, "")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ns, err := startMountNS(context.Background(), dir, plans)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("holder %d\n", ns.PID())
	time.Sleep(time.Hour)
	return 0
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts and namespaces (run the tests as root, as make test does in CI)")
	}
	for _, tool := range []string{"nsenter", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (util-linux)", tool)
		}
	}
}

// fakeRootfs is a directory with the mount points a rootfs has; no
// mmdebstrap is needed to test mounting.
func fakeRootfs(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "rootfs")
	for _, d := range []string{"proc", "sys", "dev", "run", "etc"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	return root
}

func testState(rootfs string) *multistep.BasicStateBag {
	state := new(multistep.BasicStateBag)
	state.Put(stateUI, packersdk.TestUi(nil))
	state.Put(stateRootfs, rootfs)
	return state
}

// mntNS returns the mount namespace of pid, as "mnt:[inode]".
func mntNS(t *testing.T, pid int) string {
	t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// nsUsers returns the processes still in mount namespace ns.
func nsUsers(ns string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/mnt"); err == nil && l == ns {
			out = append(out, e.Name())
		}
	}
	return out
}

// waitNSGone waits, boundedly, until no process is left in ns; the kernel
// then drops its mounts.
func waitNSGone(t *testing.T, ns string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(nsUsers(ns)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes still in the build's mount namespace %s: %v", ns, nsUsers(ns))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// assertClean checks that the machine holds no mount under dir, and that the
// rootfs's dev is its own empty directory, not the machine's /dev.
func assertClean(t *testing.T, rootfs string) {
	t.Helper()
	left, err := mountsUnder(filepath.Dir(rootfs))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Fatalf("mounts left on the machine: %v", left)
	}
	if entries, _ := os.ReadDir(filepath.Join(rootfs, "dev")); len(entries) > 1 {
		t.Fatalf("%s/dev has %d entries: still the machine's /dev?", rootfs, len(entries))
	}
}

func TestMountStepMountsPrivatelyAndCleansUp(t *testing.T) {
	needRoot(t)
	rootfs := fakeRootfs(t)
	state := testState(rootfs)
	step := &stepMount{Mounts: defaultMounts}
	if action := step.Run(context.Background(), state); action != multistep.ActionContinue {
		t.Fatalf("mount step: %v", state.Get("error"))
	}
	ns := state.Get(stateMountNS).(*mountNS)
	pid := ns.PID()
	inHolder, err := mountsUnderIn(fmt.Sprintf("/proc/%d/mountinfo", pid), rootfs)
	must(t, err)
	want := []string{"proc", "sys", "dev", "run", "dev/pts"}
	if len(inHolder) != len(want) {
		t.Fatalf("holder's mounts %v, want %v", inHolder, want)
	}
	for i, w := range want {
		if inHolder[i] != filepath.Join(rootfs, w) {
			t.Errorf("mount %d: %s, want %s", i, inHolder[i], filepath.Join(rootfs, w))
		}
	}
	if left, _ := mountsUnder(rootfs); len(left) > 0 {
		t.Errorf("mounts visible on the machine while building: %v", left)
	}
	// A command through the wrapper sees the mounts.
	cmdline, _ := ns.Wrap("test -c " + rootfs + "/dev/null && test -e " + rootfs + "/proc/self/status")
	if out, err := exec.Command("/bin/sh", "-c", cmdline).CombinedOutput(); err != nil {
		t.Errorf("wrapped command: %v %s", err, out)
	}
	nsName := mntNS(t, pid)
	step.Cleanup(state)
	waitNSGone(t, nsName)
	assertClean(t, rootfs)
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Errorf("holder %d still runs", pid)
	}
}

// blockStep waits for the build to be cancelled, as a long provisioner would.
type blockStep struct{ started chan struct{} }

func (s *blockStep) Run(ctx context.Context, _ multistep.StateBag) multistep.StepAction {
	close(s.started)
	<-ctx.Done()
	return multistep.ActionHalt
}
func (s *blockStep) Cleanup(multistep.StateBag) {}

// TestInterruptedBuildUnmounts cancels a build mid-way, as Ctrl-C in Packer
// does, and checks that the runner's Cleanup leaves nothing mounted.
func TestInterruptedBuildUnmounts(t *testing.T) {
	needRoot(t)
	rootfs := fakeRootfs(t)
	state := testState(rootfs)
	block := &blockStep{started: make(chan struct{})}
	runner := &multistep.BasicRunner{Steps: []multistep.Step{&stepMount{Mounts: defaultMounts}, block}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { runner.Run(ctx, state); close(done) }()
	<-block.started
	ns := state.Get(stateMountNS).(*mountNS)
	nsName := mntNS(t, ns.PID())
	if got, _ := mountsUnderIn(fmt.Sprintf("/proc/%d/mountinfo", ns.PID()), rootfs); len(got) != 5 {
		t.Fatalf("mounted %v before the interrupt", got)
	}
	cancel()
	<-done
	if _, ok := state.GetOk(multistep.StateCancelled); !ok {
		t.Error("the runner did not record the cancel")
	}
	waitNSGone(t, nsName)
	assertClean(t, rootfs)
}

// TestKilledPluginDropsMounts kills the process that made the mounts with
// SIGKILL, so no Cleanup runs; the kernel must drop the mounts.
func TestKilledPluginDropsMounts(t *testing.T) {
	needRoot(t)
	rootfs := fakeRootfs(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+rootfs)
	out, err := cmd.StdoutPipe()
	must(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	var holder int
	if _, err := fmt.Sscanf(line, "holder %d", &holder); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q: %s", line, stderr.String())
	}
	if got, _ := mountsUnderIn(fmt.Sprintf("/proc/%d/mountinfo", holder), rootfs); len(got) != 5 {
		t.Fatalf("helper mounted %v", got)
	}
	nsName := mntNS(t, holder)
	must(t, cmd.Process.Signal(os.Kill))
	_ = cmd.Wait()
	waitNSGone(t, nsName)
	assertClean(t, rootfs)
	// With nothing mounted, removing the rootfs cannot reach the machine's /dev.
	must(t, removeTree(filepath.Dir(rootfs)))
}

func TestFailedMountLeavesNothing(t *testing.T) {
	needRoot(t)
	rootfs := fakeRootfs(t)
	plans, err := planMounts(rootfs, defaultMounts, filepath.Join(t.TempDir(), "no-such-cache"))
	must(t, err)
	ns, err := startMountNS(context.Background(), rootfs, plans)
	if err == nil {
		ns.Close()
		t.Fatal("a bind of a missing directory succeeded")
	}
	if !strings.Contains(err.Error(), "no-such-cache") {
		t.Errorf("error does not name the failing mount: %v", err)
	}
	assertClean(t, rootfs)
}

func TestPlanMountsRefusesLinks(t *testing.T) {
	rootfs := fakeRootfs(t)
	must(t, os.Remove(filepath.Join(rootfs, "run")))
	must(t, os.Symlink("/etc", filepath.Join(rootfs, "run")))
	if _, err := planMounts(rootfs, []string{"/run"}, ""); err == nil {
		t.Error("planMounts accepted a mount point that links out of the rootfs")
	}
	must(t, os.Remove(filepath.Join(rootfs, "run")))
	must(t, os.Symlink("etc", filepath.Join(rootfs, "run")))
	if _, err := planMounts(rootfs, []string{"/run"}, ""); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("planMounts accepted a mount point that is a link: %v", err)
	}
}

func TestMountScriptQuotes(t *testing.T) {
	s := mountScript([]mountPlan{{spec: mountSpec{bind: "/c'x"}, target: "/r/var/cache/apt/archives"}})
	if !strings.Contains(s, `mount --bind '/c'\''x' '/r/var/cache/apt/archives'`) {
		t.Errorf("script:\n%s", s)
	}
	if !strings.HasPrefix(s, "set -eu\n"+makePrivate) {
		t.Errorf("the script does not make mounts private first:\n%s", s)
	}
}
