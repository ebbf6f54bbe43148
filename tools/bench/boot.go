package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/gpuhost/gpuhost/internal/qemu"
)

// bootTarget is issue 16's target for a boot to its live verdict under
// TCG on 2 cores.
const bootTarget = 90.0

// reportBoots prints the figures the last boot test recorded under dir
// (make e2e keeps them there) rather than booting again: one boot under
// TCG takes minutes, and the boot test already times every boot it makes.
// Without figures it says how to get them; with -only boot that is an
// error.
func reportBoots(w io.Writer, dir string, required bool) error {
	if dir == "" {
		if required {
			return fmt.Errorf("-only boot needs -boot DIR (make e2e keeps the boot test's figures in out/e2e)")
		}
		return nil
	}
	boots, err := qemu.ReadTimings(dir)
	if err != nil {
		if !required && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, qemu.ErrNoTimings)) {
			fmt.Fprintf(w, "boot: no figures under %s; make e2e records them there\n\n", dir)
			return nil
		}
		return fmt.Errorf("reading the boot test's figures: %w", err)
	}
	fmt.Fprintf(w, "boot to live verdict, as the last boot test recorded it under %s (guest figures on the guest's clock, seconds since its kernel started)\n", dir)
	fmt.Fprintf(w, "%-10s %-8s %-5s %12s  %-48s %16s %11s %9s %7s %8s\n", "boot", "firmware", "accel", "power on", "measured to", "root unlock", "multi-user", "reports", "scan", "drift")
	for _, b := range boots {
		unlock := "-"
		if b.UnlockSeconds > 0 {
			unlock = fmt.Sprintf("%.1f s at %.1f", b.UnlockSeconds, b.UnlockStartSeconds)
		}
		fmt.Fprintf(w, "%-10s %-8s %-5s %10.1f s  %-48s %16s %9.1f s %7.1f s %5d s %6d s\n", b.Boot, b.Firmware, b.Accelerator,
			b.PowerOnSeconds, b.Measured, unlock, b.MultiUserSeconds, b.ReportsSeconds, b.ScanSeconds, b.DriftSeconds)
	}
	for _, b := range boots {
		verdict := "met"
		if b.PowerOnSeconds >= bootTarget {
			verdict = "not met"
		}
		fmt.Fprintf(w, "target < %.0f s from power on to the live verdict under TCG on 2 cores: %s %s (%.1f s, %s, on %s)\n", bootTarget, b.Boot, verdict, b.PowerOnSeconds, b.Measured, b.Accelerator)
	}
	fmt.Fprintln(w)
	return nil
}
