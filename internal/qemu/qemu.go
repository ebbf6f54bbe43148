// Package qemu boots a disk image in QEMU the way gpuhost's boot test and
// `gpuhost boot` do: through a qcow2 overlay, so the image itself is never
// written; under OVMF (UEFI) or SeaBIOS; with KVM only when a probe boot
// shows the kernel starting within seconds (once a probe has hung, the
// process skips the probe), and TCG otherwise; with user-mode networking
// whose only ways in are forwards from 127.0.0.1; and with the serial
// console in a file that every failure quotes.
//
// A VM is a QEMU process that writes its own pidfile and is killed by that
// PID: when its context ends, when Stop is called, when KillAll runs (a
// signal handler's job), and by the kernel when the process that started it
// dies (Pdeathsig).
package qemu

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Accelerators a VM runs on.
const (
	AccelAuto = "auto"
	AccelKVM  = "kvm"
	AccelTCG  = "tcg"
)

// SelftestSerial is the serial number of the disk that asks a booted image
// for a selftest (deploy/udev/90-gpuhost-selftest.rules) and receives its
// reports.
const SelftestSerial = "gpuhost-selftest"

// Forward opens a TCP port on 127.0.0.1 of this machine to a guest port.
type Forward struct {
	Host, Guest int
}

// Config is one boot.
type Config struct {
	// Disk is the image to boot, qcow2 or raw. It is opened read-only, as
	// the backing file of Overlay.
	Disk string
	// Overlay is the qcow2 file the guest writes to. It is made when
	// missing; a second boot with the same Overlay boots the same host
	// again.
	Overlay string
	// OverlaySize is the virtual size of a new overlay, such as "4G", so
	// that the guest sees a larger disk than the image; empty keeps the
	// image's size.
	OverlaySize string
	// Firmware defaults to UEFI.
	Firmware Firmware
	// VarsFile holds the UEFI variables; a new one is copied from
	// OVMFVars, or OVMFVarsMicrosoft under Secure Boot. Defaults to
	// Overlay + ".vars", so that the same host boots with the same
	// variables.
	VarsFile string
	// MOKCerts are DER certificates a new VarsFile holds as shim's MokList
	// (Secure Boot only), as if an operator had enrolled them with mokutil
	// and MokManager: the kernel then trusts modules they signed.
	MOKCerts [][]byte
	// Kernel and Append boot a kernel directly, with no firmware boot
	// loader: for testing what the harness does with a kernel that fails.
	Kernel, Append string
	// Dir receives the serial log and the pidfile.
	Dir string
	// Accel is AccelAuto (the default), AccelKVM or AccelTCG.
	Accel string
	// ProbeTimeout is how long a KVM probe waits for the kernel's first
	// line on the console. Defaults to 10 seconds.
	ProbeTimeout time.Duration
	// MemoryMiB and CPUs default to 2048 and 2.
	MemoryMiB, CPUs int
	// Forwards are the only ways into the guest's network.
	Forwards []Forward
	// SelftestDisk, when set, is a raw file attached as a virtio disk with
	// serial SelftestSerial.
	SelftestDisk string
	// Credentials are passed as systemd system credentials in SMBIOS type
	// 11 strings, which PID 1 imports at boot.
	Credentials map[string][]byte
	// TPMState, when set, gives the VM a TPM 2.0 (a tpm-tis device) backed
	// by a swtpm process (Debian package swtpm) that keeps its state in
	// this directory: boot again with the same TPMState, as with the same
	// Overlay, and the guest finds the same TPM, what it sealed included.
	// The swtpm is started with QEMU and killed by its PID with it.
	TPMState string
	// SWTPM is the swtpm program; looked up on PATH when empty.
	SWTPM string
	// QEMU and QEMUImg are the programs; looked up on PATH when empty.
	QEMU, QEMUImg string
	// Log receives a line for each decision (accelerator, firmware).
	Log io.Writer
}

// VM is a running QEMU.
type VM struct {
	cfg     Config
	cmd     *exec.Cmd
	pid     int
	tpm     *swtpm
	serial  string
	pidfile string
	accel   string
	started time.Time
	done    chan struct{}
	waitErr error
	stderr  *bytes.Buffer
}

var (
	runningMu sync.Mutex
	running   = map[*VM]bool{}
)

// KillAll kills every VM this process started that is still running. A
// signal handler calls it before the process exits.
func KillAll() {
	runningMu.Lock()
	vms := make([]*VM, 0, len(running))
	for v := range running {
		vms = append(vms, v)
	}
	runningMu.Unlock()
	for _, v := range vms {
		v.Stop()
	}
}

func (c *Config) defaults() error {
	if c.Disk == "" && c.Kernel == "" {
		return errors.New("no disk and no kernel to boot")
	}
	if c.Dir == "" {
		return errors.New("no directory for the serial log and pidfile")
	}
	if c.Firmware == "" {
		c.Firmware = UEFI
	}
	if !slices.Contains([]Firmware{UEFI, UEFISecureBoot, BIOS}, c.Firmware) {
		return fmt.Errorf("firmware %q: use uefi, uefi-secureboot or bios", c.Firmware)
	}
	if len(c.MOKCerts) > 0 && c.Firmware != UEFISecureBoot {
		return fmt.Errorf("MOK certificates are enrolled for shim, which only Secure Boot firmware (%s) runs", UEFISecureBoot)
	}
	if c.Accel == "" {
		c.Accel = AccelAuto
	}
	if !slices.Contains([]string{AccelAuto, AccelKVM, AccelTCG}, c.Accel) {
		return fmt.Errorf("accelerator %q: use auto, kvm or tcg", c.Accel)
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = 10 * time.Second
	}
	if c.MemoryMiB == 0 {
		c.MemoryMiB = 2048
	}
	if c.CPUs == 0 {
		c.CPUs = 2
	}
	if c.Overlay == "" && c.Disk != "" {
		c.Overlay = filepath.Join(c.Dir, "overlay.qcow2")
	}
	if c.VarsFile == "" {
		c.VarsFile = c.Overlay + ".vars"
		if c.Overlay == "" {
			c.VarsFile = filepath.Join(c.Dir, "uefi.vars")
		}
	}
	for _, p := range []*string{&c.QEMU, &c.QEMUImg} {
		name := map[*string]string{&c.QEMU: "qemu-system-x86_64", &c.QEMUImg: "qemu-img"}[p]
		if *p == "" {
			found, err := exec.LookPath(name)
			if err != nil {
				return fmt.Errorf("%s is not installed (Debian package %s)", name, map[string]string{"qemu-system-x86_64": "qemu-system-x86", "qemu-img": "qemu-utils"}[name])
			}
			*p = found
		}
	}
	if c.TPMState != "" && c.SWTPM == "" {
		found, err := exec.LookPath("swtpm")
		if err != nil {
			return errors.New("swtpm is not installed (Debian package swtpm), and TPMState asks for a TPM")
		}
		c.SWTPM = found
	}
	for name := range c.Credentials {
		if !credentialRE.MatchString(name) {
			return fmt.Errorf("credential name %q: use letters, digits, dot, dash and underscore", name)
		}
	}
	return nil
}

var credentialRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// Start prepares the overlay and firmware variables and starts QEMU. With
// AccelAuto it first boots on KVM and keeps that VM if the kernel's first
// line reaches the console within ProbeTimeout; otherwise it stops it and
// boots on TCG, as every later AccelAuto start of the process does without
// a probe. The VM is stopped when ctx ends.
func Start(ctx context.Context, cfg Config) (*VM, error) {
	if err := cfg.defaults(); err != nil {
		return nil, fmt.Errorf("booting %s: %w", cfg.Disk, err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("booting %s: %w", cfg.Disk, err)
	}
	if err := cfg.prepareDisks(ctx); err != nil {
		return nil, fmt.Errorf("booting %s: %w", cfg.Disk, err)
	}
	// Which QEMU ran matters to a slow or failed boot: TCG's speed differs
	// a great deal between releases (make qemu).
	cfg.logf("qemu: %s: %s", cfg.QEMU, version(ctx, cfg.QEMU))
	accel := cfg.Accel
	if accel == AccelAuto {
		switch {
		case !kvmUsable():
			cfg.logf("qemu: /dev/kvm is not usable; running on TCG")
		case kvmHung.Load():
			cfg.logf("qemu: a KVM guest of this process hung before; running on TCG")
		default:
			v, err := start(ctx, cfg, AccelKVM)
			if err == nil {
				if v.probe(ctx, cfg.ProbeTimeout) {
					cfg.logf("qemu: KVM booted the kernel within %s; running on KVM", cfg.ProbeTimeout)
					return v, nil
				}
				v.Stop()
				kvmHung.Store(true)
			}
			cfg.logf("qemu: no kernel on the console within %s under KVM (%v); running on TCG", cfg.ProbeTimeout, errOr(err, "the guest hung"))
		}
		accel = AccelTCG
	}
	v, err := start(ctx, cfg, accel)
	if err != nil {
		return nil, err
	}
	if accel == AccelTCG && cfg.Accel != AccelAuto {
		cfg.logf("qemu: running on TCG")
	}
	return v, nil
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// kvmHung records that a KVM probe of this process saw no kernel in time.
// Where that happens (nested virtualisation whose guests hang after the
// firmware) it happens to every guest, and each probe would spend its
// whole timeout, and a core, finding that out again.
var kvmHung atomic.Bool

// kvmUsable says whether /dev/kvm can be opened for reading and writing.
func kvmUsable() bool {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// tcgCPU is the guest CPU under TCG: every feature TCG emulates but the
// fast string ones (ERMS, FSRM). With them the guest kernel clears and
// copies pages with rep stosb and rep movsb, which TCG steps through a
// byte at a time, where without them it moves eight bytes a step; every
// page a guest touches is cleared so (docs/testing.md has the figures).
const tcgCPU = "max,erms=off,fsrm=off"

// args returns QEMU's command line for accel.
func (c *Config) args(accel, serial, pidfile, tpmSock string) []string {
	machine := "q35,graphics=off"
	if c.Firmware == UEFISecureBoot {
		// SMM guards the variable store: OVMF's Secure Boot build will
		// not start without it.
		machine += ",smm=on"
	}
	a := []string{
		"-name", "gpuhost-boot",
		"-machine", machine,
		"-m", strconv.Itoa(c.MemoryMiB), "-smp", strconv.Itoa(c.CPUs),
		// No display and no monitor: the serial console is all there is,
		// and SeaBIOS and OVMF print to it when there is no graphics.
		"-display", "none", "-vga", "none", "-monitor", "none",
		"-serial", "file:" + serial,
		"-pidfile", pidfile,
		"-no-reboot",
	}
	if accel == AccelKVM {
		a = append(a, "-accel", "kvm", "-cpu", "host")
	} else {
		a = append(a, "-accel", "tcg", "-cpu", tcgCPU)
	}
	if c.Firmware != BIOS {
		code, _ := c.Firmware.files()
		if c.Firmware == UEFISecureBoot {
			// Only SMM code may write the flash: the variables are
			// changed through the firmware, which checks each write.
			a = append(a, "-global", "driver=cfi.pflash01,property=secure,value=on")
		}
		a = append(a,
			"-drive", "if=pflash,format=raw,unit=0,readonly=on,file="+code,
			"-drive", "if=pflash,format=raw,unit=1,file="+c.VarsFile)
	}
	if c.Kernel != "" {
		a = append(a, "-kernel", c.Kernel, "-append", c.Append)
	}
	if c.Disk != "" {
		// The disk is the only boot device: without strict, a firmware
		// that cannot boot it tries the network for minutes instead of
		// saying so.
		a = append(a, "-drive", "file="+c.Overlay+",format=qcow2,if=none,id=root",
			"-device", "virtio-blk-pci,drive=root,bootindex=0", "-boot", "strict=on")
	}
	if tpmSock != "" {
		a = append(a, "-chardev", "socket,id=chrtpm,path="+tpmSock,
			"-tpmdev", "emulator,id=tpm0,chardev=chrtpm", "-device", "tpm-tis,tpmdev=tpm0")
	}
	if c.SelftestDisk != "" {
		a = append(a, "-drive", "file="+c.SelftestDisk+",format=raw,if=none,id=selftest",
			"-device", "virtio-blk-pci,drive=selftest,serial="+SelftestSerial)
	}
	// User-mode networking: the guest reaches out through QEMU, and in
	// only through the forwards. No option ROM, so no network boot.
	netdev := "user,id=net0"
	for _, f := range c.Forwards {
		netdev += fmt.Sprintf(",hostfwd=tcp:127.0.0.1:%d-:%d", f.Host, f.Guest)
	}
	a = append(a, "-netdev", netdev, "-device", "virtio-net-pci,netdev=net0,romfile=")
	for _, name := range slices.Sorted(maps.Keys(c.Credentials)) {
		// Base64 has no comma, which QEMU's option parser would split on.
		a = append(a, "-smbios", "type=11,value=io.systemd.credential.binary:"+name+"="+base64.StdEncoding.EncodeToString(c.Credentials[name]))
	}
	return a
}

// start runs QEMU on accel, with a fresh serial log.
func start(ctx context.Context, cfg Config, accel string) (*VM, error) {
	v := &VM{
		cfg:     cfg,
		serial:  filepath.Join(cfg.Dir, "serial.log"),
		pidfile: filepath.Join(cfg.Dir, "qemu.pid"),
		accel:   accel,
		done:    make(chan struct{}),
		stderr:  &bytes.Buffer{},
	}
	for _, f := range []string{v.serial, v.pidfile} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	sock := ""
	if cfg.TPMState != "" {
		tpm, err := startSWTPM(ctx, cfg.SWTPM, cfg.TPMState, cfg.Dir)
		if err != nil {
			return nil, err
		}
		v.tpm, sock = tpm, tpm.sock
	}
	v.cmd = exec.Command(cfg.QEMU, cfg.args(accel, v.serial, v.pidfile, sock)...)
	v.cmd.Stdout, v.cmd.Stderr = v.stderr, v.stderr
	v.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := v.cmd.Start(); err != nil {
		v.tpm.stop()
		return nil, fmt.Errorf("starting %s: %w", cfg.QEMU, err)
	}
	v.started = time.Now()
	v.pid = v.cmd.Process.Pid
	runningMu.Lock()
	running[v] = true
	runningMu.Unlock()
	go func() {
		v.waitErr = v.cmd.Wait()
		// The swtpm ends with QEMU (--terminate); should it not, it is
		// killed here, before the VM counts as gone.
		v.tpm.stop()
		runningMu.Lock()
		delete(running, v)
		runningMu.Unlock()
		close(v.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			v.Stop()
		case <-v.done:
		}
	}()
	return v, nil
}

// probe waits for the kernel's first line on the console.
func (v *VM) probe(ctx context.Context, timeout time.Duration) bool {
	err := v.WaitSerial(ctx, "Linux version", timeout)
	return err == nil
}

// Accel is the accelerator the VM runs on: kvm or tcg.
func (v *VM) Accel() string { return v.accel }

// PID is QEMU's process id, as its pidfile records it once QEMU has
// written it.
func (v *VM) PID() int {
	if b, err := os.ReadFile(v.pidfile); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return pid
		}
	}
	return v.pid
}

// Pidfile is where QEMU wrote its process id.
func (v *VM) Pidfile() string { return v.pidfile }

// SerialLog is the file the guest's serial console is written to.
func (v *VM) SerialLog() string { return v.serial }

// Started is when QEMU was started.
func (v *VM) Started() time.Time { return v.started }

// Exited reports whether QEMU has ended.
func (v *VM) Exited() bool {
	select {
	case <-v.done:
		return true
	default:
		return false
	}
}

// Done is closed when QEMU has ended.
func (v *VM) Done() <-chan struct{} { return v.done }

// Stop kills QEMU by its PID: SIGTERM, then SIGKILL if it is still there
// after five seconds. It returns once QEMU is gone. The PID is the one this
// process started, which is what QEMU's pidfile records (it is never told
// to daemonize); a pidfile naming another process would not be trusted.
func (v *VM) Stop() {
	if v.Exited() {
		v.tpm.stop()
		return
	}
	pid := v.pid
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-v.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-v.done
	}
	v.tpm.stop()
}

// TPMPID is the swtpm's process id, or 0 when the VM has no TPM.
func (v *VM) TPMPID() int {
	if v.tpm == nil {
		return 0
	}
	return v.tpm.cmd.Process.Pid
}

// Wait waits for QEMU to exit by itself (the guest powered off) within
// timeout. A guest that is still running then, or one whose console shows
// it failing to boot, is stopped and reported with the console's tail.
func (v *VM) Wait(ctx context.Context, timeout time.Duration) error {
	return v.watch(ctx, timeout, "", "power off")
}

// WaitSerial waits for a line of the console to contain substr within
// timeout. QEMU exiting first, a failure on the console, or the timeout is
// an error that quotes the console's tail.
func (v *VM) WaitSerial(ctx context.Context, substr string, timeout time.Duration) error {
	return v.watch(ctx, timeout, substr, fmt.Sprintf("%q on the console", substr))
}

// bootFailures are what firmware, GRUB, the kernel and systemd print when a
// boot cannot go on. None of them ever shows in a boot that works.
var bootFailures = []string{
	"No bootable device",           // SeaBIOS: no disk it could boot
	"Boot failed: not a bootable",  // SeaBIOS
	"UEFI Interactive Shell",       // OVMF: nothing bootable, so the shell
	"grub rescue>",                 // GRUB found no /boot/grub
	"Kernel panic - not syncing",   // the kernel
	"You are in emergency mode",    // systemd could not mount what fstab wants
	"Give root password for maint", // the same, older wording
}

func (v *VM) watch(ctx context.Context, timeout time.Duration, substr, what string) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		log := v.readSerial()
		if substr != "" && strings.Contains(log, substr) {
			return nil
		}
		for _, f := range bootFailures {
			if strings.Contains(log, f) {
				v.settle()
				v.Stop()
				return v.failure(fmt.Sprintf("the boot failed (%q on the console) before %s", f, what))
			}
		}
		select {
		case <-v.done:
			if substr == "" && v.waitErr == nil {
				return nil
			}
			if substr != "" && strings.Contains(v.readSerial(), substr) {
				return nil
			}
			return v.failure(fmt.Sprintf("qemu exited (%v) before %s%s", v.waitErr, what, v.qemuOutput()))
		case <-deadline.C:
			v.Stop()
			return v.failure(fmt.Sprintf("no %s within %s", what, timeout))
		case <-ctx.Done():
			v.Stop()
			return v.failure(fmt.Sprintf("cancelled while waiting for %s: %v", what, ctx.Err()))
		case <-tick.C:
		}
	}
}

// settle gives a failing guest's console a moment to finish what it is
// printing (firmware writes its verdict over several lines), so that the
// tail a failure quotes holds whole lines: it returns once the console has
// been quiet for a short while, QEMU exited, or a bound passed.
func (v *VM) settle() {
	const quiet, bound = 300 * time.Millisecond, 2 * time.Second
	end := time.NewTimer(bound)
	defer end.Stop()
	last := len(v.readSerial())
	for {
		select {
		case <-v.done:
			return
		case <-end.C:
			return
		case <-time.After(quiet):
			n := len(v.readSerial())
			if n == last {
				return
			}
			last = n
		}
	}
}

func (v *VM) qemuOutput() string {
	if s := strings.TrimSpace(v.stderr.String()); s != "" {
		return "; qemu said: " + s
	}
	return ""
}

// failure is an error naming what went wrong, with the last lines of the
// console.
func (v *VM) failure(msg string) error {
	return fmt.Errorf("booting %s (%s, %s): %s after %s; the last %d lines of the serial console:\n%s",
		v.name(), v.cfg.Firmware, v.accel, msg, time.Since(v.started).Round(time.Second), TailLines, v.Tail(TailLines))
}

func (v *VM) name() string {
	if v.cfg.Disk != "" {
		return v.cfg.Disk
	}
	return v.cfg.Kernel
}

// TailLines is how much of the console a failure quotes.
const TailLines = 50

// Tail returns the last n lines of the console, with terminal control
// sequences removed.
func (v *VM) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(v.readSerial(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// maxSerial bounds how much of the console is read: its tail is what
// matters, and a guest could write without end.
const maxSerial = 8 << 20

var ansiRE = regexp.MustCompile("\x1b(\\[[0-9;?=]*[A-Za-z]|[()][A-Z0-9]|[=>c])")

// readSerial returns the console so far, as text.
func (v *VM) readSerial() string {
	f, err := os.Open(v.serial)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > maxSerial {
		_, _ = f.Seek(fi.Size()-maxSerial, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, maxSerial))
	s := ansiRE.ReplaceAllString(string(b), "")
	s = strings.ReplaceAll(s, "\r", "")
	return s
}

// Lines calls fn with each line of the console so far.
func (v *VM) Lines(fn func(string)) {
	sc := bufio.NewScanner(strings.NewReader(v.readSerial()))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fn(sc.Text())
	}
}
