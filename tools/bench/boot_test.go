package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/qemu"
)

// The boot figures are read from what the boot test recorded and judged
// against the target; with none recorded, make bench says where they come
// from, and -only boot fails.
func TestReportBoots(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	if err := reportBoots(&out, filepath.Join(dir, "missing"), false); err != nil || !strings.Contains(out.String(), "make e2e records them there") {
		t.Errorf("no figures, not required: %v %q", err, out.String())
	}
	if err := reportBoots(&out, dir, true); err == nil {
		t.Error("-only boot with no figures did not fail")
	}
	if err := reportBoots(&out, "", true); err == nil || !strings.Contains(err.Error(), "-boot DIR") {
		t.Errorf("-only boot without -boot: %v", err)
	}
	for _, b := range []qemu.BootTimings{
		{Boot: "uefi", Firmware: "uefi", Accelerator: "tcg", Measured: "power on to the selftest's reports on its disk", PowerOnSeconds: 513.4, UnlockStartSeconds: 4.5, UnlockSeconds: 5.5, MultiUserSeconds: 334.6, ReportsSeconds: 460, ScanSeconds: 42, DriftSeconds: 24},
		{Boot: "fast", Firmware: "bios", Accelerator: "kvm", Measured: "power on to the selftest's reports on its disk", PowerOnSeconds: 41},
	} {
		d := filepath.Join(dir, "boot", b.Boot)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := b.Write(d); err != nil {
			t.Fatal(err)
		}
	}
	out.Reset()
	if err := reportBoots(&out, dir, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"5.5 s at 4.5", "513.4 s", "uefi not met (513.4 s, power on to the selftest's reports on its disk, on tcg)", "fast met (41.0 s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}
