package rootfs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// End-to-end tests: a real `packer build` of testdata/e2e.pkr.hcl with the
// plugin installed offline. They bootstrap bookworm from this machine's Debian
// mirror, so they run only with GPUHOST_E2E=1 (make e2e-builder).

const e2eTimeout = 15 * time.Minute

type e2eEnv struct {
	packer     string
	pluginPath string
	cache      string
	dir        string
}

func setupE2E(t *testing.T) *e2eEnv {
	t.Helper()
	if os.Getenv("GPUHOST_E2E") != "1" {
		t.Skip("end-to-end Packer build: set GPUHOST_E2E=1 (make e2e-builder); needs root and the Debian mirror")
	}
	needRoot(t)
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		t.Skip("needs mmdebstrap (make build-deps)")
	}
	abs := func(env, def string) string {
		p := os.Getenv(env)
		if p == "" {
			p = def
		}
		p, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s: %v (make packer plugin)", env, err)
		}
		return p
	}
	e := &e2eEnv{
		packer:     abs("GPUHOST_PACKER", "../../bin/packer"),
		pluginPath: t.TempDir(),
		dir:        t.TempDir(),
	}
	plugin := abs("GPUHOST_PLUGIN", "../../bin/packer-plugin-gpuhost")
	// The package cache outlives the test, so later runs are warm.
	e.cache = os.Getenv("GPUHOST_E2E_APT_CACHE")
	if e.cache == "" {
		e.cache = filepath.Join(os.TempDir(), "gpuhost-e2e-apt-cache")
	}
	out, err := e.command("plugins", "install", "--path", plugin, "github.com/gpuhost/gpuhost").CombinedOutput()
	if err != nil {
		t.Fatalf("packer plugins install: %v\n%s", err, out)
	}
	return e
}

func (e *e2eEnv) command(args ...string) *exec.Cmd {
	cmd := exec.Command(e.packer, args...)
	cmd.Env = append(os.Environ(), "PACKER_PLUGIN_PATH="+e.pluginPath, "CHECKPOINT_DISABLE=1", "PACKER_NO_COLOR=1")
	return cmd
}

func (e *e2eEnv) build(out string, vars ...string) *exec.Cmd {
	args := []string{"build", "-machine-readable", "-force", "-var", "output_dir=" + out, "-var", "apt_cache_dir=" + e.cache}
	for _, v := range vars {
		args = append(args, "-var", v)
	}
	return e.command(append(args, "testdata/e2e.pkr.hcl")...)
}

// mountsAnywhere returns mounts under dir seen by any process on the
// machine, in any mount namespace.
func mountsAnywhere(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if got, err := mountsUnderIn("/proc/"+e.Name()+"/mountinfo", dir); err == nil && len(got) > 0 {
			out = append(out, e.Name()+": "+strings.Join(got, ","))
		}
	}
	return out
}

// waitNoMounts waits, boundedly, until no process sees a mount under dir.
func waitNoMounts(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := mountsAnywhere(dir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mounts under %s remain: %v", dir, left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stepSeconds reads the step timing table from the build's output.
func stepSeconds(out string) map[string]string {
	m := map[string]string{}
	_, table, ok := strings.Cut(strings.ReplaceAll(out, `\n`, "\n"), "Step timings:")
	if !ok {
		return m
	}
	for _, line := range strings.Split(table, "\n") {
		// "==> gpuhost-rootfs.e2e: mmdebstrap        32.2"
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, secs := f[len(f)-2], f[len(f)-1]
		if _, err := strconv.ParseFloat(secs, 64); err == nil {
			m[name] = secs
		}
		if name == "total" {
			break
		}
	}
	return m
}

func TestE2EPackerBuild(t *testing.T) {
	e := setupE2E(t)
	out := filepath.Join(e.dir, "out")

	// A fresh bootstrap cache: the first build misses and fills it, the
	// second extracts the tree from it.
	bootCache := filepath.Join(t.TempDir(), "bootstrap")
	start := time.Now()
	b, err := e.build(out, "output_format=tar", "bootstrap_cache_dir="+bootCache).CombinedOutput()
	if err != nil {
		t.Fatalf("packer build: %v\n%s", err, b)
	}
	t.Logf("tar build took %s", time.Since(start).Round(time.Second))
	log := string(b)
	for _, want := range []string{",artifact,0,builder-id,gpuhost.rootfs", ",artifact,0,files-count,1", "rootfs.tar.zst", "Step timings"} {
		if !strings.Contains(log, want) {
			t.Errorf("build output lacks %q", want)
		}
	}
	rootfs := filepath.Join(out, "rootfs")
	if data, err := os.ReadFile(filepath.Join(rootfs, "etc/hello")); err != nil || string(data) != "hello\n" {
		t.Errorf("/etc/hello: %q, %v", data, err)
	}
	if _, err := os.Lstat(filepath.Join(rootfs, "usr/sbin/policy-rc.d")); err == nil {
		t.Error("policy-rc.d was left in the rootfs")
	}
	list, err := exec.Command("tar", "--zstd", "-tf", filepath.Join(out, "rootfs.tar.zst")).Output()
	if err != nil || !bytes.Contains(list, []byte("./etc/hello\n")) {
		t.Errorf("tarball lacks ./etc/hello (%v)", err)
	}
	waitNoMounts(t, e.dir)
	steps := stepSeconds(log)
	if steps["mmdebstrap"] == "" || steps["cache-save"] == "" || steps["total"] == "" {
		t.Errorf("no step timings in the output: %v", steps)
	}
	if !strings.Contains(log, "bootstrap cache miss ") || !strings.Contains(log, "Bootstrap cache written: "+bootCache) {
		t.Errorf("the first build did not fill the bootstrap cache")
	}
	t.Logf("tar build steps (seconds): %v", steps)
	status, err := os.ReadFile(filepath.Join(rootfs, "var/lib/dpkg/status"))
	if err != nil {
		t.Fatal(err)
	}

	// A second build reuses both caches and writes a qcow2 image.
	start = time.Now()
	b, err = e.build(out, "output_format=qcow2", "image_size=1G", "bootstrap_cache_dir="+bootCache).CombinedOutput()
	if err != nil {
		t.Fatalf("packer build qcow2: %v\n%s", err, b)
	}
	t.Logf("warm qcow2 build took %s, steps %v", time.Since(start).Round(time.Second), stepSeconds(string(b)))
	if !strings.Contains(string(b), "bootstrap cache hit ") {
		t.Errorf("the second build did not use the bootstrap cache")
	}
	again, err := os.ReadFile(filepath.Join(rootfs, "var/lib/dpkg/status"))
	if err != nil || !bytes.Equal(again, status) {
		t.Errorf("the tree from the cache has other packages than the bootstrapped one (%v)", err)
	}
	if data, err := os.ReadFile(filepath.Join(rootfs, "etc/hello")); err != nil || string(data) != "hello\n" {
		t.Errorf("provisioners did not run on the cached tree: /etc/hello %q, %v", data, err)
	}
	info, err := exec.Command("qemu-img", "info", filepath.Join(out, "rootfs.qcow2")).Output()
	if err != nil || !bytes.Contains(info, []byte("file format: qcow2")) {
		t.Errorf("qemu-img info: %v\n%s", err, info)
	}
	waitNoMounts(t, e.dir)
}

// startSleepingBuild starts a build whose provisioner sleeps, and returns once
// the provisioner runs (its mounts are up).
func startSleepingBuild(t *testing.T, e *e2eEnv, out string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := e.build(out, "provision_sleep=600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	buf := &syncBuffer{}
	ready := make(chan struct{})
	var once sync.Once
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(buf, sc.Text())
			if strings.Contains(sc.Text(), "provisioner-ready") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	go func() { _ = cmd.Wait(); pw.Close() }()
	select {
	case <-ready:
	case <-time.After(e2eTimeout):
		t.Fatalf("the provisioner never started:\n%s", buf.String())
	}
	if len(mountsAnywhere(out)) == 0 {
		t.Fatalf("no mounts under %s while provisioning", out)
	}
	if left, _ := mountsUnder(out); len(left) > 0 {
		t.Fatalf("mounts visible in the machine's namespace: %v", left)
	}
	return cmd, buf
}

func waitExit(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for cmd.ProcessState == nil {
		if time.Now().After(deadline) {
			t.Fatal("packer did not exit")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestE2EInterruptCtrlC sends SIGINT to Packer while a provisioner runs, as
// Ctrl-C does: the build stops, cleans up, and leaves no mount.
func TestE2EInterruptCtrlC(t *testing.T) {
	e := setupE2E(t)
	out := filepath.Join(e.dir, "out")
	cmd, buf := startSleepingBuild(t, e, out)
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd)
	waitNoMounts(t, e.dir)
	if cmd.ProcessState.Success() {
		t.Errorf("an interrupted build succeeded:\n%s", buf.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the interrupted build left %s", out)
	}
}

// TestE2EKillPlugin kills the plugin with SIGKILL while a provisioner runs:
// no Cleanup runs, and still no mount or chrooted process may remain.
func TestE2EKillPlugin(t *testing.T) {
	e := setupE2E(t)
	out := filepath.Join(e.dir, "out")
	cmd, _ := startSleepingBuild(t, e, out)
	killed := 0
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if strings.HasPrefix(exe, e.pluginPath) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed++
			}
		}
	}
	if killed == 0 {
		t.Fatal("found no plugin process to kill")
	}
	waitNoMounts(t, e.dir)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	// No process may still run inside the rootfs (the sleeping provisioner).
	rootfs := filepath.Join(out, "rootfs")
	deadline := time.Now().Add(30 * time.Second)
	for {
		var inside []string
		entries, _ := os.ReadDir("/proc")
		for _, ent := range entries {
			if r, err := os.Readlink("/proc/" + ent.Name() + "/root"); err == nil && strings.HasPrefix(r, rootfs) {
				inside = append(inside, ent.Name())
			}
		}
		if len(inside) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still chrooted in %s: %v", rootfs, inside)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := removeTree(out); err != nil {
		t.Errorf("removing the killed build's output: %v", err)
	}
}
