package qemu

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// A disk that names a file outside itself is never booted: QEMU would open
// the backing file or external data file the image's author named. Start
// refuses it before any QEMU runs, naming the file.
func TestBootRefusesAnImageThatNamesAnotherFile(t *testing.T) {
	qemuImg := testutil.Tool(t, "qemu-img", "qemu-utils")
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside.raw")
	must(t, os.WriteFile(outside, make([]byte, 1<<20), 0o600))
	backed := filepath.Join(dir, "backed.qcow2")
	external := filepath.Join(dir, "external.qcow2")
	for _, args := range [][]string{
		{"create", "-q", "-f", "qcow2", "-b", outside, "-F", "raw", backed},
		{"create", "-q", "-f", "qcow2", "-o", "data_file=" + filepath.Join(dir, "data.raw") + ",data_file_raw=on", external, "1M"},
	} {
		if out, err := exec.Command(qemuImg, args...).CombinedOutput(); err != nil {
			t.Fatalf("qemu-img %v: %v\n%s", args, err, out)
		}
	}
	for disk, names := range map[string]string{backed: "backing file", external: "external data file"} {
		_, err := imageFormat(context.Background(), qemuImg, disk)
		if err == nil || !strings.Contains(err.Error(), names) {
			t.Errorf("%s: %v, want it refused naming its %s", disk, err, names)
		}
	}
	if format, err := imageFormat(context.Background(), qemuImg, outside); err != nil || format != "raw" {
		t.Errorf("a raw disk that stands alone: %q, %v", format, err)
	}
}

// MOK certificates asked for a VM whose UEFI variables exist (a kept
// overlay's) are an error, not dropped in silence.
func TestMOKOnAKeptOverlayIsRefused(t *testing.T) {
	code, _ := UEFISecureBoot.files()
	if _, err := os.Stat(code); err != nil {
		if testutil.InCI() {
			t.Fatalf("OVMF is not installed (Debian package ovmf): %v", err)
		}
		t.Skip("OVMF is not installed (Debian package ovmf)")
	}
	vars := filepath.Join(t.TempDir(), "overlay.qcow2.vars")
	must(t, os.WriteFile(vars, []byte("kept"), 0o644))
	c := Config{Firmware: UEFISecureBoot, VarsFile: vars, MOKCerts: [][]byte{{0x30}}}
	if err := c.prepareVars(); err == nil || !strings.Contains(err.Error(), "new overlay") {
		t.Errorf("prepareVars = %v, want the MOK refused", err)
	}
	if b, _ := os.ReadFile(vars); string(b) != "kept" {
		t.Errorf("the kept variables changed: %q", b)
	}
	c.MOKCerts = nil
	if err := c.prepareVars(); err != nil {
		t.Errorf("a kept overlay without MOK certificates: %v", err)
	}
}
