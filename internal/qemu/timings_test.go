package qemu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The guest-side figures come from what the selftest writes: the unit
// table, its uptime, the crypt units' journal and its console lines. The
// booted system's second start of the crypt unit (the volume already open)
// is not the unlock.
func TestBootTimingsFromSelftest(t *testing.T) {
	reports := map[string][]byte{
		"units.txt": []byte("Id=containerd.service\nActiveState=active\nActiveEnterTimestampMonotonic=257300000\n\n" +
			"Id=multi-user.target\nActiveState=active\nActiveEnterTimestampMonotonic=334612345\n"),
		"uptime": []byte("459.97\n"),
		"crypt-journal.txt": []byte(`-- Journal begins at Tue 2026-12-01 20:10:00 UTC. --
[    4.512345] debian-12-gpu systemd[1]: Starting systemd-cryptsetup@luks\x2d7546.service - Cryptography Setup for luks-7546...
[    9.876543] debian-12-gpu systemd-cryptsetup[312]: Set cipher aes, mode xts-plain64, key size 512 bits for device /dev/disk/by-uuid/7546.
[   10.012345] debian-12-gpu systemd[1]: Finished systemd-cryptsetup@luks\x2d7546.service - Cryptography Setup for luks-7546.
[   80.000000] debian-12-gpu systemd[1]: Starting systemd-cryptsetup@luks\x2d7546.service - Cryptography Setup for luks-7546...
[   81.000000] debian-12-gpu systemd[1]: Finished systemd-cryptsetup@luks\x2d7546.service - Cryptography Setup for luks-7546.
`),
	}
	console := "[  OK  ] Started gpuhost-selftest.service\ngpuhost-selftest: scan host exited 0 after 42 s\r\ngpuhost-selftest: drift exited 1 after 24 s\n"
	var b BootTimings
	b.Selftest(reports, console)
	if b.MultiUserSeconds != 334.612345 || b.ReportsSeconds != 459.97 || b.ScanSeconds != 42 || b.DriftSeconds != 24 {
		t.Errorf("figures %+v", b)
	}
	if b.UnlockStartSeconds != 4.512345 || b.UnlockSeconds != 5.5 {
		t.Errorf("unlock at %v taking %v; want 4.512345 and 5.5", b.UnlockStartSeconds, b.UnlockSeconds)
	}
	// A selftest that wrote none of it leaves the guest's figures at zero.
	var none BootTimings
	none.Selftest(map[string][]byte{"crypt-journal.txt": []byte("[    4.5] h systemd[1]: Starting systemd-cryptsetup@x.service\n")}, "")
	if none != (BootTimings{}) {
		t.Errorf("from nothing (an unlock that never finished): %+v", none)
	}
}

func TestBootTimingsRoundTrip(t *testing.T) {
	root := t.TempDir()
	if _, err := ReadTimings(root); err == nil || !strings.Contains(err.Error(), "no "+TimingsFile) {
		t.Errorf("an empty directory: %v", err)
	}
	for _, b := range []BootTimings{
		{Boot: "uefi-tpm", Firmware: "uefi", Accelerator: "tcg", Measured: "power off", PowerOnSeconds: 393.5},
		{Boot: "bios", Firmware: "bios", Accelerator: "tcg", Measured: "reports", PowerOnSeconds: 341.25, UnlockSeconds: 3.5},
	} {
		dir := filepath.Join(root, "boot", b.Boot)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := b.Write(dir); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadTimings(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Boot != "bios" || got[0].UnlockSeconds != 3.5 || got[1].Boot != "uefi-tpm" || got[1].PowerOnSeconds != 393.5 {
		t.Errorf("read back %+v", got)
	}
	if err := os.WriteFile(filepath.Join(root, "boot", "bios", TimingsFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTimings(root); err == nil || !strings.Contains(err.Error(), filepath.Join("bios", TimingsFile)) {
		t.Errorf("a damaged file: %v", err)
	}
}
