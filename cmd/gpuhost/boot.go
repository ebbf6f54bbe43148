//go:build !lean

package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/internal/qemu"
	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/reports"
)

// bootCommand boots a baked disk in QEMU, as the boot test does: to watch
// it come up, or with --selftest to have it scan itself live and report.
func (a *app) bootCommand() *cobra.Command {
	var (
		cfg         qemu.Config
		firmware    string
		overlay     string
		selftest    string
		waivers     string
		forwards    []string
		credentials []string
		moks        []string
		timeout     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "boot IMAGE",
		Short: "Boot a baked disk image in QEMU (UEFI or BIOS), optionally scanning it live from inside",
		Long: "Boots a disk made by the gpuhost-rootfs builder (output_format \"disk\") in QEMU, through a qcow2\n" +
			"overlay so that IMAGE itself is never written, and copies the serial console to stdout until the\n" +
			"guest powers off. KVM is used when a probe boot reaches the kernel within seconds, TCG otherwise.\n" +
			"The guest's network is QEMU's user mode; --forward opens 127.0.0.1 ports to it.\n\n" +
			"With --selftest DIR the disk the image's gpuhost-selftest.service looks for is attached: the guest\n" +
			"runs gpuhost scan host and gpuhost drift against its baked manifest, writes the reports, and powers\n" +
			"off; they are written into DIR, the live verdict is printed, and the exit code is the live scan's.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Disk = args[0]
			cfg.Firmware = qemu.Firmware(firmware)
			if err := bootGuestInputs(&cfg, forwards, moks, credentials); err != nil {
				return err
			}
			work, err := os.MkdirTemp("", "gpuhost-boot-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(work)
			cfg.Dir = work
			cfg.Overlay = overlay
			cfg.Log = a.stderr
			if selftest != "" {
				if err := attachSelftest(&cfg, work, waivers); err != nil {
					return err
				}
			}
			return a.boot(cmd.Context(), cfg, selftest, timeout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&firmware, "firmware", "uefi", "uefi (OVMF), uefi-secureboot (OVMF enforcing Secure Boot with Microsoft's keys enrolled, under SMM) or bios (SeaBIOS)")
	f.StringArrayVar(&moks, "mok", nil, "with uefi-secureboot: a certificate (PEM or DER, such as an image's /var/lib/dkms/mok.pub) enrolled in shim's MOK list of a new overlay's UEFI variables, as mokutil --import and MokManager would (repeatable)")
	f.StringVar(&cfg.Accel, "accel", qemu.AccelAuto, "auto (KVM when it boots, else TCG), kvm or tcg")
	f.IntVar(&cfg.MemoryMiB, "memory", 2048, "guest memory in MiB")
	f.IntVar(&cfg.CPUs, "cpus", 2, "guest CPUs")
	f.StringVar(&overlay, "overlay", "", "the qcow2 file the guest writes to, kept, so that a later boot with it boots the same host (default: a temporary one)")
	f.StringVar(&cfg.TPMState, "tpm-state", "", "give the guest a TPM 2.0 (swtpm) keeping its state in this directory, kept, so that a later boot with it finds the same TPM and what the guest sealed to it (an encrypted root's key)")
	f.StringVar(&cfg.OverlaySize, "disk-size", "", "size of a new overlay, such as 8G: the root grows to it at boot (default: the image's)")
	f.StringArrayVar(&forwards, "forward", nil, "HOSTPORT:GUESTPORT, a TCP port on 127.0.0.1 to the guest (repeatable)")
	f.StringArrayVar(&credentials, "credential", nil, "NAME=FILE, a systemd credential for the guest, such as gpuhost.agent-token=token.txt (repeatable)")
	f.StringVar(&selftest, "selftest", "", "attach the selftest disk and write the guest's reports into this directory")
	f.StringVar(&waivers, "waivers", "", "with --selftest: the waivers the guest's scans use instead of its own /etc/gpuhost/waivers.yaml")
	f.DurationVar(&timeout, "timeout", 30*time.Minute, "stop the guest when it has not powered off by then")
	return cmd
}

// bootGuestInputs reads what the flags hand the guest (forwarded ports,
// MOK certificates, systemd credentials) before anything is started, so a
// bad flag fails at once rather than after a disk has been prepared.
func bootGuestInputs(cfg *qemu.Config, forwards, moks, credentials []string) error {
	for _, f := range forwards {
		fw, err := parseForward(f)
		if err != nil {
			return err
		}
		cfg.Forwards = append(cfg.Forwards, fw)
	}
	for _, m := range moks {
		der, err := readCertificateDER(m)
		if err != nil {
			return fmt.Errorf("--mok: %w", err)
		}
		cfg.MOKCerts = append(cfg.MOKCerts, der)
	}
	cfg.Credentials = map[string][]byte{}
	for _, c := range credentials {
		name, file, ok := strings.Cut(c, "=")
		if !ok || name == "" || file == "" {
			return fmt.Errorf("--credential %q: use NAME=FILE", c)
		}
		b, err := userfile.Read(file, 1<<20)
		if err != nil {
			return fmt.Errorf("--credential %s: %w", name, err)
		}
		cfg.Credentials[name] = b
	}
	return nil
}

// attachSelftest writes the disk the image's selftest service looks for,
// carrying the waivers when given, into the boot's work directory, so it
// goes when the boot does.
func attachSelftest(cfg *qemu.Config, work, waivers string) error {
	inputs := map[string][]byte{}
	if waivers != "" {
		b, err := userfile.Read(waivers, 4<<20)
		if err != nil {
			return fmt.Errorf("--waivers: %w", err)
		}
		inputs["waivers.yaml"] = b
	}
	cfg.SelftestDisk = filepath.Join(work, "selftest.raw")
	return qemu.WriteSelftestDisk(cfg.SelftestDisk, inputs)
}

// boot runs one boot: the console is copied to stdout as it grows, and the
// guest is stopped by its PID on Ctrl-C, at the timeout, or when the
// console shows the boot failing.
func (a *app) boot(ctx context.Context, cfg qemu.Config, selftest string, timeout time.Duration) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	vm, err := qemu.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer vm.Stop()
	fmt.Fprintf(a.stderr, "gpuhost boot: %s under %s on %s (qemu pid %d)\n", cfg.Disk, cfg.Firmware, vm.Accel(), vm.PID())
	if cfg.TPMState != "" {
		fmt.Fprintf(a.stderr, "gpuhost boot: TPM 2.0 from swtpm pid %d, state in %s\n", vm.TPMPID(), cfg.TPMState)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		followFile(vm, a.stdout)
	}()
	err = vm.Wait(ctx, timeout)
	<-copied
	if err != nil {
		return err
	}
	if selftest == "" {
		return nil
	}
	files, err := qemu.ReadSelftestDisk(cfg.SelftestDisk)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(selftest, 0o755); err != nil {
		return err
	}
	for name, data := range files {
		if err := manifest.WriteFileAtomic(filepath.Join(selftest, filepath.Base(name)), data, 0o644); err != nil {
			return err
		}
	}
	return a.printLiveVerdict(files)
}

// printLiveVerdict says what the live scan and drift found, and returns
// the live scan's exit code.
func (a *app) printLiveVerdict(files map[string][]byte) error {
	code, err := strconv.Atoi(strings.TrimSpace(string(files["scan.rc"])))
	if err != nil {
		return fmt.Errorf("the selftest wrote no exit code for its scan: %q", files["scan.rc"])
	}
	for _, name := range []string{"scan", "drift"} {
		var r reports.Report
		if err := json.Unmarshal(files[name+".json"], &r); err != nil {
			return fmt.Errorf("the selftest's %s report: %w (stderr: %s)", name, err, strings.TrimSpace(string(files[name+".err"])))
		}
		s := r.Summary
		fmt.Fprintf(a.stdout, "live %s: %d checks: %d failed, %d errors, %d waived, %d skipped, %d passed (exit %s)\n",
			name, s.Total, s.ByStatus[reports.StatusFail], s.ByStatus[reports.StatusError], s.ByStatus[reports.StatusWaived],
			s.ByStatus[reports.StatusSkip], s.ByStatus[reports.StatusPass], strings.TrimSpace(string(files[name+".rc"])))
		for _, res := range r.Results {
			if res.Status == reports.StatusFail || res.Status == reports.StatusError {
				fmt.Fprintf(a.stdout, "  %s %s %s: %s\n", res.ID, res.Severity, res.Status, strings.Join(res.Messages, "; "))
			}
		}
	}
	if code != 0 {
		return &exitError{code: code, err: errors.New("the live scan found failures")}
	}
	return nil
}

// followFile copies the VM's console to w as it grows, until QEMU exits.
func followFile(vm *qemu.VM, w io.Writer) {
	var off int64
	copyNew := func() {
		f, err := os.Open(vm.SerialLog())
		if err != nil {
			return
		}
		defer f.Close()
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return
		}
		n, _ := io.Copy(w, f)
		off += n
	}
	for {
		select {
		case <-vm.Done():
			copyNew()
			return
		case <-time.After(200 * time.Millisecond):
			copyNew()
		}
	}
}

// parseForward reads HOSTPORT:GUESTPORT.
func parseForward(s string) (qemu.Forward, error) {
	h, g, ok := strings.Cut(s, ":")
	hp, err1 := strconv.Atoi(h)
	gp, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || hp < 1 || hp > 65535 || gp < 1 || gp > 65535 {
		return qemu.Forward{}, fmt.Errorf("--forward %q: use HOSTPORT:GUESTPORT, such as 9108:9108", s)
	}
	return qemu.Forward{Host: hp, Guest: gp}, nil
}

// readCertificateDER reads a certificate file, PEM or DER, as DER.
func readCertificateDER(file string) ([]byte, error) {
	b, err := userfile.Read(file, 1<<20)
	if err != nil {
		return nil, err
	}
	if blk, _ := pem.Decode(b); blk != nil {
		b = blk.Bytes
	}
	if _, err := x509.ParseCertificate(b); err != nil {
		return nil, fmt.Errorf("parsing the certificate %s: %w", file, err)
	}
	return b, nil
}
