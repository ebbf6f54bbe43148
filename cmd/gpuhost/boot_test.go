//go:build !lean

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/qemu"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// TestBootUnbootableDisk: `gpuhost boot` of a disk with no EFI system
// partition exits 2 as soon as the firmware gives up, saying so with the
// console's tail, and leaves no QEMU behind.
func TestBootUnbootableDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("boots QEMU; make test runs this")
	}
	testutil.Tool(t, "qemu-system-x86_64", "qemu-system-x86")
	sfdisk := testutil.Tool(t, "sfdisk", "fdisk")
	if _, err := os.Stat(qemu.OVMFCode); err != nil {
		if testutil.InCI() {
			t.Fatalf("CI is set and OVMF is missing (Debian package ovmf): %v", err)
		}
		t.Skipf("OVMF is missing (Debian package ovmf): %v", err)
	}
	disk := filepath.Join(t.TempDir(), "no-esp.raw")
	if err := os.WriteFile(disk, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(disk, 64<<20); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sfdisk, "--quiet", "--no-reread", "--no-tell-kernel", disk)
	cmd.Stdin = strings.NewReader("label: gpt\nstart=2048, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sfdisk: %v\n%s", err, out)
	}
	o := gpuhost(t, "", "boot", disk, "--accel", "tcg", "--memory", "256", "--cpus", "1", "--timeout", "3m")
	if o.code != 2 {
		t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	for _, want := range []string{"running on TCG", "the boot failed", "UEFI Interactive Shell", "lines of the serial console"} {
		if !strings.Contains(o.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, o.stderr)
		}
	}
	if !strings.Contains(o.stdout, "BdsDxe") {
		t.Errorf("the console was not copied to stdout:\n%s", o.stdout)
	}
}

func TestBootRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"boot", "x.qcow2", "--forward", "9108"},
		{"boot", "x.qcow2", "--forward", "0:22"},
		{"boot", "x.qcow2", "--credential", "token"},
		{"boot", "x.qcow2", "--firmware", "coreboot"},
	} {
		if o := gpuhost(t, "", args...); o.code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, o.code, o.stderr)
		}
	}
}
