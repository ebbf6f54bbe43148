package qemu

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

func TestArgs(t *testing.T) {
	c := Config{
		Disk: "d.qcow2", Overlay: "/w/o.qcow2", Firmware: UEFI, VarsFile: "/w/vars", Dir: "/w",
		MemoryMiB: 1024, CPUs: 2, SelftestDisk: "/w/st.raw",
		Forwards:    []Forward{{Host: 40001, Guest: 9108}, {Host: 40002, Guest: 22}},
		Credentials: map[string][]byte{"gpuhost.agent-token": []byte("secret,with=commas")},
	}
	args := strings.Join(c.args(AccelTCG, "/w/serial.log", "/w/qemu.pid", ""), " ")
	for _, want := range []string{
		"-accel tcg -cpu max,erms=off,fsrm=off",
		"-serial file:/w/serial.log", "-pidfile /w/qemu.pid", "-no-reboot", "-monitor none",
		"if=pflash,format=raw,unit=0,readonly=on,file=" + OVMFCode, "if=pflash,format=raw,unit=1,file=/w/vars",
		"-drive file=/w/o.qcow2,format=qcow2,if=none,id=root -device virtio-blk-pci,drive=root,bootindex=0 -boot strict=on",
		"-device virtio-blk-pci,drive=selftest,serial=gpuhost-selftest",
		"-netdev user,id=net0,hostfwd=tcp:127.0.0.1:40001-:9108,hostfwd=tcp:127.0.0.1:40002-:22 -device virtio-net-pci,netdev=net0,romfile=",
		"-smbios type=11,value=io.systemd.credential.binary:gpuhost.agent-token=c2VjcmV0LHdpdGg9Y29tbWFz",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("qemu arguments lack %q:\n%s", want, args)
		}
	}
	if strings.Contains(args, "smm=on") || strings.Contains(args, "secure") {
		t.Errorf("plain UEFI asks for SMM: %s", args)
	}
	c.Firmware = UEFISecureBoot
	args = strings.Join(c.args(AccelTCG, "s", "p", ""), " ")
	for _, want := range []string{"-machine q35,graphics=off,smm=on", "-global driver=cfi.pflash01,property=secure,value=on", "unit=0,readonly=on,file=" + OVMFCodeSecureBoot} {
		if !strings.Contains(args, want) {
			t.Errorf("Secure Boot arguments lack %q:\n%s", want, args)
		}
	}
	c.Firmware = BIOS
	args = strings.Join(c.args(AccelKVM, "s", "p", ""), " ")
	if strings.Contains(args, "pflash") || !strings.Contains(args, "-accel kvm -cpu host") {
		t.Errorf("BIOS on KVM: %s", args)
	}
	bad := Config{Disk: "d", Dir: "/w", Credentials: map[string][]byte{"a b": nil}, QEMU: "/bin/true", QEMUImg: "/bin/true"}
	if err := bad.defaults(); err == nil {
		t.Error("a credential name with a space was accepted")
	}
	if err := (&Config{Disk: "d", Dir: "/w", Firmware: "coreboot", QEMU: "/bin/true", QEMUImg: "/bin/true"}).defaults(); err == nil {
		t.Error("an unknown firmware was accepted")
	}
	if err := (&Config{Disk: "d", Dir: "/w", Firmware: UEFI, MOKCerts: [][]byte{{1}}, QEMU: "/bin/true", QEMUImg: "/bin/true"}).defaults(); err == nil {
		t.Error("MOK certificates without Secure Boot were accepted")
	}
}

// TestSelftestDiskRoundTrip writes the inputs as the test does, lets GNU tar
// write reports over them as the guest's script does, and reads them back.
func TestSelftestDiskRoundTrip(t *testing.T) {
	tar := testutil.Tool(t, "tar", "tar")
	dir := t.TempDir()
	disk := filepath.Join(dir, "st.raw")
	if err := WriteSelftestDisk(disk, map[string][]byte{"hold": []byte("30\n"), "waivers.yaml": []byte("- id: X\n")}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(disk); fi.Size() != SelftestDiskSize {
		t.Errorf("disk size %d", fi.Size())
	}
	in := filepath.Join(dir, "in")
	must(t, os.Mkdir(in, 0o755))
	testutil.Run(t, time.Minute, tar, "-xf", disk, "-C", in)
	if b, _ := os.ReadFile(filepath.Join(in, "hold")); string(b) != "30\n" {
		t.Errorf("the guest reads hold as %q", b)
	}
	if _, err := ReadSelftestDisk(disk); err == nil || !strings.Contains(err.Error(), "no reports") {
		t.Errorf("a disk with only the inputs: %v", err)
	}
	report := filepath.Join(dir, "report")
	must(t, os.Mkdir(report, 0o755))
	must(t, os.WriteFile(filepath.Join(report, "scan.json"), []byte(`{"results":[]}`), 0o644))
	must(t, os.WriteFile(filepath.Join(report, "done"), []byte("1\n"), 0o644))
	testutil.Run(t, time.Minute, tar, "-cf", disk, "-C", report, ".")
	got, err := ReadSelftestDisk(disk)
	if err != nil {
		t.Fatal(err)
	}
	if string(got["scan.json"]) != `{"results":[]}` || len(got) != 2 {
		t.Errorf("reports %v", got)
	}
	if err := WriteSelftestDisk(disk, map[string][]byte{"../x": nil}); err == nil {
		t.Error("an input name with a path was accepted")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// needQEMU skips (fails under CI) without QEMU and OVMF.
func needQEMU(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("boots QEMU; make test runs this")
	}
	testutil.Tool(t, "qemu-system-x86_64", "qemu-system-x86")
	testutil.Tool(t, "qemu-img", "qemu-utils")
	if _, err := os.Stat(OVMFCode); err != nil {
		if testutil.InCI() {
			t.Fatalf("CI is set and OVMF is missing: %v", err)
		}
		t.Skipf("OVMF is missing (Debian package ovmf): %v", err)
	}
}

// unbootable writes a disk with a GPT and a Linux partition but no boot
// loader and no EFI system partition.
func unbootable(t *testing.T) string {
	t.Helper()
	sfdisk := testutil.Tool(t, "sfdisk", "fdisk")
	disk := filepath.Join(t.TempDir(), "unbootable.raw")
	must(t, os.WriteFile(disk, nil, 0o644))
	must(t, os.Truncate(disk, 64<<20))
	cmd := exec.Command(sfdisk, "--quiet", "--no-reread", "--no-tell-kernel", disk)
	cmd.Stdin = strings.NewReader("label: gpt\nstart=2048, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sfdisk: %v\n%s", err, out)
	}
	return disk
}

// TestUnbootableDiskFailsWithTheConsole boots disks without a bootable
// partition: a GPT with no EFI system partition under UEFI, and a disk with
// no boot sector at all under BIOS. The wait must end as soon as the
// firmware gives up, not at the limit, with the console's tail.
func TestUnbootableDiskFailsWithTheConsole(t *testing.T) {
	needQEMU(t)
	blank := filepath.Join(t.TempDir(), "blank.raw")
	must(t, os.WriteFile(blank, nil, 0o644))
	must(t, os.Truncate(blank, 1<<20))
	// SeaBIOS prints "Boot failed: not a bootable disk", then "No bootable
	// device."; the watch stops at whichever it reads first, and that one
	// must be named and shown in the console's tail.
	for _, c := range []struct {
		fw   Firmware
		disk string
		says []string
	}{{UEFI, unbootable(t), []string{"UEFI Interactive Shell"}}, {BIOS, blank, []string{"No bootable device", "Boot failed: not a bootable"}}} {
		t.Run(string(c.fw), func(t *testing.T) {
			v, err := Start(context.Background(), Config{Disk: c.disk, Dir: t.TempDir(), Firmware: c.fw, Accel: AccelTCG, MemoryMiB: 256, CPUs: 1, Log: testLog{t}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(v.Stop)
			start := time.Now()
			err = v.Wait(context.Background(), 4*time.Minute)
			if err == nil {
				t.Fatal("an unbootable disk powered off cleanly")
			}
			msg := err.Error()
			named := slices.ContainsFunc(c.says, func(s string) bool { return strings.Count(msg, s) >= 2 })
			if !strings.Contains(msg, "the boot failed") || !strings.Contains(msg, "lines of the serial console") || !named {
				t.Errorf("the error does not say why, with the console:\n%s", msg)
			}
			if took := time.Since(start); took > 2*time.Minute {
				t.Errorf("the failure took %s to notice", took)
			}
			if !v.Exited() {
				t.Error("qemu still runs after the failure")
			}
			t.Logf("%s: %s", c.fw, firstLine(msg))
		})
	}
}

// TestGuestThatNeverReportsTimesOut: a guest that never powers off, here a
// GPT disk whose boot sector has no code (SeaBIOS jumps into it and hangs),
// ends at the limit, stopped, with the console in the error.
func TestGuestThatNeverReportsTimesOut(t *testing.T) {
	needQEMU(t)
	v, err := Start(context.Background(), Config{Disk: unbootable(t), Dir: t.TempDir(), Firmware: BIOS, Accel: AccelTCG, MemoryMiB: 128, CPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Stop)
	err = v.Wait(context.Background(), 15*time.Second)
	if err == nil {
		t.Fatal("a hung guest powered off")
	}
	if msg := err.Error(); !strings.Contains(msg, "no power off within 15s") || !strings.Contains(msg, "Booting from Hard Disk") {
		t.Errorf("the error does not say what was waited for, with the console:\n%s", msg)
	}
	if !v.Exited() {
		t.Error("qemu still runs after the timeout")
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestNoQEMUSurvivesItsParent starts a VM with a software TPM from a child
// process, which is then interrupted (SIGINT: its handler kills the VM and
// its swtpm by PID) or killed (SIGKILL: the kernel kills QEMU and swtpm,
// both started with Pdeathsig): in both cases neither process may remain.
func TestNoQEMUSurvivesItsParent(t *testing.T) {
	needQEMU(t)
	testutil.Tool(t, "swtpm", "swtpm")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperVM$", "-test.v")
			cmd.Env = append(os.Environ(), "GPUHOST_QEMU_HELPER="+dir)
			p := testutil.Start(t, cmd)
			p.WaitLine(t, 2*time.Minute, "qemu pid ")
			pid, tpmPID := 0, 0
			for _, l := range strings.Split(p.Output(), "\n") {
				if v, ok := strings.CutPrefix(l, "qemu pid "); ok {
					f := strings.Fields(v)
					pid, _ = strconv.Atoi(f[0])
					if len(f) == 3 && f[1] == "swtpm" {
						tpmPID, _ = strconv.Atoi(f[2])
					}
				}
			}
			if pid == 0 || tpmPID == 0 {
				t.Fatalf("the helper started no VM with a TPM:\n%s", p.Output())
			}
			if b, err := os.ReadFile(filepath.Join(dir, "qemu.pid")); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(pid) {
				t.Errorf("pidfile %q (%v), want %d", b, err, pid)
			}
			must(t, cmd.Process.Signal(sig))
			for i := 0; ; i++ {
				if !alive(pid) {
					break
				}
				if i > 100 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("qemu %d survived its parent's %s", pid, sig)
				}
				time.Sleep(100 * time.Millisecond)
			}
			for i := 0; alive(tpmPID); i++ {
				if i > 100 {
					_ = syscall.Kill(tpmPID, syscall.SIGKILL)
					t.Fatalf("swtpm %d survived its parent's %s", tpmPID, sig)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// alive says whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

// TestHelperVM is the child of TestNoQEMUSurvivesItsParent: it boots a VM
// that never ends, says its PID, and waits to be interrupted or killed.
func TestHelperVM(t *testing.T) {
	dir := os.Getenv("GPUHOST_QEMU_HELPER")
	if dir == "" {
		t.Skip("the child process of TestNoQEMUSurvivesItsParent")
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	disk := filepath.Join(dir, "blank.raw")
	must(t, os.WriteFile(disk, nil, 0o644))
	must(t, os.Truncate(disk, 1<<20))
	v, err := Start(context.Background(), Config{Disk: disk, Dir: dir, Firmware: BIOS, Accel: AccelTCG, MemoryMiB: 128, CPUs: 1, TPMState: filepath.Join(dir, "tpm")})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && v.PID() == 0; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(v.Pidfile()); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("qemu pid %d swtpm %d\n", v.PID(), v.TPMPID())
	<-sigs
	KillAll()
	os.Exit(130)
}

// TestSWTPMStopsByPID starts a swtpm as a VM does and stops it: its socket
// is served, its state directory made, and after stop the process is gone,
// with no zombie left.
func TestSWTPMStopsByPID(t *testing.T) {
	bin := testutil.Tool(t, "swtpm", "swtpm")
	dir := t.TempDir()
	tpm, err := startSWTPM(context.Background(), bin, filepath.Join(dir, "state"), dir)
	if err != nil {
		t.Fatal(err)
	}
	pid := tpm.cmd.Process.Pid
	if fi, err := os.Stat(tpm.sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("%s is not a socket: %v", tpm.sock, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "swtpm.pid")); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(pid) {
		t.Errorf("swtpm's pidfile says %q (%v), want %d", b, err, pid)
	}
	tpm.stop()
	tpm.stop()
	if alive(pid) {
		t.Fatalf("swtpm %d runs after stop", pid)
	}
	long := filepath.Join(dir, strings.Repeat("d", 100))
	if _, err := startSWTPM(context.Background(), bin, filepath.Join(dir, "state"), long); err == nil || !strings.Contains(err.Error(), "Unix socket") {
		t.Errorf("a socket path too long for a Unix socket: %v", err)
	}
}

// TestTPMStateOutlivesTheVM boots a VM with a TPM twice from one state
// directory, as the boot test's first and second boot do: the TPM's
// permanent state is written the first time and still there for the
// second (swtpm reuses it rather than manufacture a new TPM); no swtpm
// outlives its VM.
func TestTPMStateOutlivesTheVM(t *testing.T) {
	needQEMU(t)
	testutil.Tool(t, "swtpm", "swtpm")
	state := filepath.Join(t.TempDir(), "tpm")
	disk := unbootable(t)
	for i := range 2 {
		dir := t.TempDir()
		v, err := Start(context.Background(), Config{Disk: disk, Overlay: filepath.Join(dir, "o.qcow2"), Dir: dir, Firmware: UEFI, Accel: AccelTCG, MemoryMiB: 256, CPUs: 1, TPMState: state})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(v.Stop)
		if args := strings.Join(v.cmd.Args, " "); !strings.Contains(args, "-tpmdev emulator,id=tpm0,chardev=chrtpm -device tpm-tis,tpmdev=tpm0") {
			t.Errorf("qemu runs without the TPM: %s", args)
		}
		tpmPID := v.TPMPID()
		// OVMF finds no boot loader and stops in its shell, having used
		// the TPM (it measures what it boots).
		if err := v.Wait(context.Background(), 4*time.Minute); err == nil || !strings.Contains(err.Error(), "UEFI Interactive Shell") {
			t.Fatalf("boot %d: %v", i+1, err)
		}
		if alive(tpmPID) {
			t.Errorf("boot %d: swtpm %d outlived its VM", i+1, tpmPID)
		}
		b, err := os.ReadFile(filepath.Join(state, "tpm2-00.permall"))
		if err != nil || len(b) == 0 {
			t.Fatalf("boot %d: the TPM's permanent state: %v", i+1, err)
		}
	}
}

// TestAHungKVMProbeIsNotRepeated: once a KVM probe of the process has seen
// no kernel within its timeout, the next AccelAuto start goes to TCG
// without probing again. A disk with no boot sector prints no kernel
// whatever the accelerator, so the first probe hangs here on any machine
// whose /dev/kvm opens.
func TestAHungKVMProbeIsNotRepeated(t *testing.T) {
	needQEMU(t)
	if !kvmUsable() {
		t.Skip("/dev/kvm does not open here: no probe runs at all")
	}
	t.Cleanup(func() { kvmHung.Store(false) })
	kvmHung.Store(false)
	blank := filepath.Join(t.TempDir(), "blank.raw")
	must(t, os.WriteFile(blank, nil, 0o644))
	must(t, os.Truncate(blank, 1<<20))
	var logs []string
	for i := range 2 {
		var log strings.Builder
		v, err := Start(context.Background(), Config{Disk: blank, Dir: t.TempDir(), Firmware: BIOS, ProbeTimeout: 2 * time.Second, MemoryMiB: 128, CPUs: 1, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		v.Stop()
		if v.Accel() != AccelTCG {
			t.Errorf("start %d ran on %s, want tcg", i+1, v.Accel())
		}
		logs = append(logs, log.String())
	}
	if !strings.Contains(logs[0], "no kernel on the console within 2s under KVM") {
		t.Errorf("the first start did not probe KVM:\n%s", logs[0])
	}
	if !strings.Contains(logs[1], "a KVM guest of this process hung before; running on TCG") || strings.Contains(logs[1], "under KVM") {
		t.Errorf("the second start probed KVM again:\n%s", logs[1])
	}
}

// TestStartSaysWhichQEMU: a boot's log names the QEMU binary and its
// release, the first thing to ask of a slow TCG boot; a binary that cannot
// say is named with the reason.
func TestStartSaysWhichQEMU(t *testing.T) {
	needQEMU(t)
	var log strings.Builder
	blank := filepath.Join(t.TempDir(), "blank.raw")
	must(t, os.WriteFile(blank, nil, 0o644))
	must(t, os.Truncate(blank, 1<<20))
	v, err := Start(context.Background(), Config{Disk: blank, Dir: t.TempDir(), Firmware: BIOS, Accel: AccelTCG, MemoryMiB: 128, CPUs: 1, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	v.Stop()
	qemu, err := exec.LookPath("qemu-system-x86_64")
	must(t, err)
	if want := "qemu: " + qemu + ": QEMU emulator version "; !strings.Contains(log.String(), want) {
		t.Errorf("the log does not name the QEMU (%q):\n%s", want, log.String())
	}
	if got := version(context.Background(), "/bin/false"); !strings.Contains(got, "/bin/false --version: exit status 1") {
		t.Errorf("a QEMU that cannot say its version: %q", got)
	}
}
