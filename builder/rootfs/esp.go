package rootfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// espFile is one file of the EFI system partition: a file of the rootfs
// (src, relative to it) or text written by the builder (body), and its
// path on the partition.
type espFile struct {
	src, body, dst string
}

// Where the distribution's signed boot chain lies in the rootfs.
const (
	shimSigned     = "usr/lib/shim/shimx64.efi.signed"
	mokManager     = "usr/lib/shim/mmx64.efi.signed"
	shimFallback   = "usr/lib/shim/fbx64.efi.signed"
	shimBootCSV    = "usr/lib/shim/BOOTX64.CSV"
	grubEFISigned  = "usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed"
	removableEFI   = "/EFI/BOOT"
	removableShim  = removableEFI + "/BOOTX64.EFI"
	secureBootHint = "secure_boot installs shim-signed and grub-efi-amd64-signed; the image's suite must carry them"
)

// espLayout is what the disk's EFI system partition holds: its
// directories, parents first, and its files.
//
// Without secure_boot, GRUB's own core image is the removable-media boot
// loader, \EFI\BOOT\BOOTX64.EFI, which firmware loads from a disk that has
// no boot entry of its own.
//
// With it, the ESP is laid out as Debian's grub-install
// --uefi-secure-boot --force-extra-removable lays it out: shim as
// BOOTX64.EFI, with the signed GRUB and MokManager beside it, which shim
// loads from its own directory; and the same under \EFI\<distribution>
// with the fallback loader and BOOTX64.CSV, for a boot entry made later.
// The fallback stays out of \EFI\BOOT: shim would run it instead of GRUB,
// and it makes boot entries and resets the machine. The signed GRUB is one
// image with its modules built in and its prefix at \EFI\<distribution>,
// where the grub.cfg written here finds the image's own by UUID.
func espLayout(c *Config, l *diskLayout) (dirs []string, files []espFile) {
	if !c.SecureBoot {
		return []string{"/EFI", removableEFI}, []espFile{{src: grubCoreEFI, dst: removableShim}}
	}
	vendor := "/EFI/" + c.Distribution
	dirs = []string{"/EFI", removableEFI, vendor}
	files = []espFile{
		{src: shimSigned, dst: removableShim},
		{src: grubEFISigned, dst: removableEFI + "/grubx64.efi"},
		{src: mokManager, dst: removableEFI + "/mmx64.efi"},
		{src: shimSigned, dst: vendor + "/shimx64.efi"},
		{src: grubEFISigned, dst: vendor + "/grubx64.efi"},
		{src: mokManager, dst: vendor + "/mmx64.efi"},
		{src: shimFallback, dst: vendor + "/fbx64.efi"},
		{src: shimBootCSV, dst: vendor + "/BOOTX64.CSV"},
		{body: "# Written by the gpuhost-rootfs builder, as grub-install writes it for the\n" +
			"# signed GRUB: find the file system holding /boot and read its grub.cfg.\n" +
			grubLoadConfig(l) + "configfile $prefix/grub.cfg\n", dst: vendor + "/grub.cfg"},
	}
	return dirs, files
}

// writeESP makes the EFI system partition in the file esp with
// mkfs.vfat and mtools, from espLayout; text files are staged in work.
func writeESP(c *Config, l *diskLayout, rootfs, esp, work string, run func(name string, args ...string) error) error {
	dirs, files := espLayout(c, l)
	if err := run("mkfs.vfat", "-C", "-F", "32", "-s", "1", "-n", "ESP", "-i", l.ESPVolumeID, esp, strconv.Itoa(espSectors*sectorSize/1024)); err != nil {
		return err
	}
	mmd := []string{"-i", esp}
	for _, d := range dirs {
		mmd = append(mmd, "::"+d)
	}
	if err := run("mmd", mmd...); err != nil {
		return err
	}
	for i, f := range files {
		src := filepath.Join(rootfs, f.src)
		if f.src == "" {
			src = filepath.Join(work, fmt.Sprintf("esp-%d.tmp", i))
			if err := os.WriteFile(src, []byte(f.body), 0o600); err != nil {
				return err
			}
			defer os.Remove(src)
		} else if _, err := os.Stat(src); err != nil {
			if c.SecureBoot {
				return fmt.Errorf("%s for %s: %w (%s)", "/"+f.src, f.dst, err, secureBootHint)
			}
			return fmt.Errorf("%s for %s: %w", "/"+f.src, f.dst, err)
		}
		if err := run("mcopy", "-i", esp, src, "::"+f.dst); err != nil {
			return err
		}
	}
	return nil
}
