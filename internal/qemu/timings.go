package qemu

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TimingsFile is the name a boot's figures are written under, beside its
// console, so that `make bench` can report the last boot test's figures
// without booting again: a boot under TCG takes minutes.
const TimingsFile = "boot-timings.json"

// ErrNoTimings is ReadTimings's error for a directory holding no
// TimingsFile.
var ErrNoTimings = errors.New("no " + TimingsFile)

// BootTimings are one boot's figures. The host-side one is measured by
// whoever started the VM; the guest-side ones come from the selftest's
// reports and console, on the guest's clock (seconds since its kernel
// started), and are zero when the guest did not report them.
type BootTimings struct {
	// Boot names the boot, as the boot test does ("uefi-secureboot", "uefi-tpm").
	Boot string `json:"boot"`
	// Firmware is "uefi", "uefi-secureboot" or "bios".
	Firmware string `json:"firmware"`
	// Accelerator is "kvm" or "tcg": what QEMU ran the guest on.
	Accelerator string `json:"accelerator"`
	// Measured says what PowerOnSeconds spans, since a boot through
	// `gpuhost boot` is timed to power off, not to the reports.
	Measured string `json:"measured"`
	// PowerOnSeconds is host time from power on to Measured's end.
	PowerOnSeconds float64 `json:"power_on_seconds"`
	// UnlockStartSeconds and UnlockSeconds are when the root's
	// systemd-cryptsetup unit started in the initramfs and how long it
	// took to open the volume, from the guest's journal.
	UnlockStartSeconds float64 `json:"unlock_start_seconds,omitempty"`
	UnlockSeconds      float64 `json:"unlock_seconds,omitempty"`
	// MultiUserSeconds is when multi-user.target became active.
	MultiUserSeconds float64 `json:"multi_user_seconds,omitempty"`
	// ScanSeconds and DriftSeconds are how long the live scan and drift
	// ran, as the selftest printed them (whole seconds).
	ScanSeconds  int `json:"scan_seconds,omitempty"`
	DriftSeconds int `json:"drift_seconds,omitempty"`
	// ReportsSeconds is the guest's uptime once its reports were gathered.
	ReportsSeconds float64 `json:"reports_seconds,omitempty"`
}

var (
	selftestRunRE = regexp.MustCompile(`gpuhost-selftest: (scan host|drift) exited \d+ after (\d+) s`)
	// A line of `journalctl -o short-monotonic`: "[  12.345678] host ident: message".
	journalRE = regexp.MustCompile(`^\[\s*([0-9]+\.[0-9]+)\] \S+ ([^:]+): (.*)$`)
)

// Selftest fills the guest-side figures from a selftest's reports (by
// file name, as ReadSelftestDisk returns them) and the console it printed.
func (b *BootTimings) Selftest(reports map[string][]byte, console string) {
	for _, l := range strings.Split(console, "\n") {
		if m := selftestRunRE.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			if m[1] == "scan host" {
				b.ScanSeconds = n
			} else {
				b.DriftSeconds = n
			}
		}
	}
	b.MultiUserSeconds = unitActiveAt(string(reports["units.txt"]), "multi-user.target")
	if f, err := strconv.ParseFloat(strings.TrimSpace(string(reports["uptime"])), 64); err == nil {
		b.ReportsSeconds = f
	}
	b.UnlockStartSeconds, b.UnlockSeconds = cryptUnlock(string(reports["crypt-journal.txt"]))
}

// unitActiveAt reads unit's ActiveEnterTimestampMonotonic (microseconds)
// out of `systemctl show -p Id -p ActiveEnterTimestampMonotonic` output.
func unitActiveAt(show, unit string) float64 {
	id := ""
	for _, l := range strings.Split(show, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), "=")
		switch k {
		case "Id":
			id = v
		case "ActiveEnterTimestampMonotonic":
			if us, err := strconv.ParseInt(v, 10, 64); err == nil && us > 0 && id == unit {
				return float64(us) / 1e6
			}
		}
	}
	return 0
}

// cryptUnlock reads the journal of the systemd-cryptsetup@ units
// (`journalctl -o short-monotonic -u 'systemd-cryptsetup@*'`): when the
// first one started and how long until systemd said it finished. The
// booted system starts the unit again for a volume the initramfs already
// opened; only the first run, the initramfs's, is the unlock.
func cryptUnlock(journal string) (start, took float64) {
	started := false
	for _, l := range strings.Split(journal, "\n") {
		m := journalRE.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		at, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			continue
		}
		switch {
		case !started && strings.HasPrefix(m[2], "systemd[") && strings.HasPrefix(m[3], "Starting systemd-cryptsetup@"):
			start, started = at, true
		case started && strings.HasPrefix(m[2], "systemd[") && strings.HasPrefix(m[3], "Finished systemd-cryptsetup@"):
			// Microseconds, as the journal gives them, without the float
			// subtraction's tail.
			return start, math.Round((at-start)*1e6) / 1e6
		}
	}
	return 0, 0
}

// Write writes b as TimingsFile in dir.
func (b BootTimings) Write(dir string) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, TimingsFile), append(data, '\n'), 0o644)
}

// ReadTimings reads every TimingsFile under root, sorted by boot name and
// path. A root with none is an error: there is nothing to report.
func ReadTimings(root string) ([]BootTimings, error) {
	type found struct {
		path string
		t    BootTimings
	}
	var all []found
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != TimingsFile {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var t BootTimings
		if err := json.Unmarshal(data, &t); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		all = append(all, found{p, t})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%w under %s", ErrNoTimings, root)
	}
	slices.SortFunc(all, func(a, b found) int {
		if c := strings.Compare(a.t.Boot, b.t.Boot); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	out := make([]BootTimings, len(all))
	for i, f := range all {
		out[i] = f.t
	}
	return out, nil
}

// Seconds rounds d to hundredths of a second, as the figures are kept.
func Seconds(d time.Duration) float64 {
	return float64(d.Round(10*time.Millisecond)) / float64(time.Second)
}
