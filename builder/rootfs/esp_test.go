package rootfs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// With secure_boot the ESP is laid out as Debian's grub-install lays it
// out for Secure Boot: made with the real mkfs.vfat and mtools, read back
// with mtools' mtype, shim is BOOTX64.EFI with the signed GRUB and
// MokManager beside it and no fallback, \EFI\debian has the same with the
// fallback and BOOTX64.CSV, and its grub.cfg finds /boot by UUID.
func TestSecureBootESP(t *testing.T) {
	testutil.Tool(t, "mkfs.vfat", "dosfstools")
	mtype := testutil.Tool(t, "mtype", "mtools")
	mdir := testutil.Tool(t, "mdir", "mtools")
	rootfs, work := t.TempDir(), t.TempDir()
	for _, f := range []string{shimSigned, mokManager, shimFallback, shimBootCSV, grubEFISigned, grubCoreEFI} {
		must(t, os.MkdirAll(filepath.Join(rootfs, filepath.Dir(f)), 0o755))
		must(t, os.WriteFile(filepath.Join(rootfs, f), []byte("contents of "+f), 0o644))
	}
	l, err := newDiskLayout(1<<30, &luksRoot{UUID: "0b7f3c2e-54a1-4d6e-9d0c-2f7f1e5a9c11", BootFSUUID: "5d2c9a0e-8b1f-4c3d-a7e6-1f0b9c8d7e6a"}, diskIDs{})
	if err != nil {
		t.Fatal(err)
	}
	c := &Config{SecureBoot: true, Distribution: "debian"}
	run := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w: %s", name, err, out)
		}
		return nil
	}
	esp := filepath.Join(work, "esp.vfat")
	if err := writeESP(c, l, rootfs, esp, work, run); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		return testutil.Run(t, time.Minute, mtype, "-i", esp, "::"+name)
	}
	for dst, src := range map[string]string{
		"/EFI/BOOT/BOOTX64.EFI": shimSigned, "/EFI/BOOT/grubx64.efi": grubEFISigned, "/EFI/BOOT/mmx64.efi": mokManager,
		"/EFI/debian/shimx64.efi": shimSigned, "/EFI/debian/grubx64.efi": grubEFISigned, "/EFI/debian/mmx64.efi": mokManager,
		"/EFI/debian/fbx64.efi": shimFallback, "/EFI/debian/BOOTX64.CSV": shimBootCSV,
	} {
		if got := read(dst); got != "contents of "+src {
			t.Errorf("%s holds %q, want /%s", dst, got, src)
		}
	}
	cfg := read("/EFI/debian/grub.cfg")
	for _, want := range []string{"search --no-floppy --fs-uuid --set=root " + l.BootFSUUID + "\n", "set prefix=($root)/grub\n", "configfile $prefix/grub.cfg\n"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("the ESP's grub.cfg lacks %q:\n%s", want, cfg)
		}
	}
	if boot := testutil.Run(t, time.Minute, mdir, "-b", "-i", esp, "::/EFI/BOOT"); strings.Contains(strings.ToLower(boot), "fbx64") {
		t.Errorf("the fallback is in \\EFI\\BOOT, where shim would run it instead of GRUB:\n%s", boot)
	}
	if left, _ := filepath.Glob(filepath.Join(work, "esp-*.tmp")); len(left) != 0 {
		t.Errorf("staged files left behind: %v", left)
	}

	must(t, os.Remove(filepath.Join(rootfs, shimSigned)))
	err = writeESP(c, l, rootfs, filepath.Join(work, "again.vfat"), work, run)
	if err == nil || !strings.Contains(err.Error(), "/"+shimSigned) || !strings.Contains(err.Error(), "shim-signed") {
		t.Errorf("an image without shim: %v", err)
	}
	c.SecureBoot = false
	dirs, files := espLayout(c, l)
	if !slices.Equal(dirs, []string{"/EFI", "/EFI/BOOT"}) || len(files) != 1 || files[0].src != grubCoreEFI || files[0].dst != "/EFI/BOOT/BOOTX64.EFI" {
		t.Errorf("without secure_boot: %v %+v", dirs, files)
	}
}

func TestBootstrapPackagesSecureBoot(t *testing.T) {
	c := &Config{OutputFormat: "disk", KernelPackage: "linux-image-amd64", SecureBoot: true}
	got := c.bootstrapPackages()
	want := []string{"linux-image-amd64", "grub-efi-amd64-bin", "grub-pc-bin", "shim-signed", "grub-efi-amd64-signed"}
	if !slices.Equal(got, want) {
		t.Errorf("packages %v, want %v", got, want)
	}
}
