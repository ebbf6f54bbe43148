package secureboot

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// espImage makes an ESP holding files with mkfs.vfat and mtools.
func espImage(t *testing.T, files map[string]string) string { return testutil.ESPImage(t, files) }

// device opens file as a partition of the ESP type.
func device(t *testing.T, name, file string) collect.BlockDevice {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return collect.BlockDevice{Name: name, PartType: espGPTType, Size: info.Size(), R: f}
}

// A disk image's ESP is read from its FAT32 partition, as today's Debian
// image has it: GRUB's unsigned core image as BOOTX64.EFI. What the reader
// finds agrees with mtools reading the same partition.
func TestImageESP(t *testing.T) {
	grub, signed := signedGRUB(t)
	esp := espImage(t, map[string]string{"/EFI/BOOT/BOOTX64.EFI": grub, "/EFI/debian/grubx64.efi": signed})
	env := collecttest.NewEnv(t, t.TempDir(), false)
	env.Devices = []collect.BlockDevice{
		{Name: "partition 1", PartType: "0FC63DAF-8483-4772-8E79-3D69D8477DE4", Size: 1 << 20, R: strings.NewReader(strings.Repeat("\x00", 1<<20))},
		device(t, "partition 2", esp),
	}
	sb := collectFacts(t, env)
	if sb.ESP != "partition 2" || sb.ESPError != "" || len(sb.BootFiles) != 2 {
		t.Fatalf("ESP %q (%q), boot files %+v", sb.ESP, sb.ESPError, sb.BootFiles)
	}
	boot, vendor := sb.BootFiles[0], sb.BootFiles[1]
	if boot.Path != "partition 2:/EFI/BOOT/BOOTX64.EFI" || boot.Role != facts.RoleGRUB || len(boot.Signatures) != 0 || boot.Error != "" {
		t.Errorf("BOOTX64.EFI: %+v", boot)
	}
	if vendor.Path != "partition 2:/EFI/debian/grubx64.efi" || vendor.Role != facts.RoleGRUB || !verified(vendor) {
		t.Errorf("grubx64.efi: %+v", vendor)
	}
	// An ESP with no /EFI holds no boot files, and that is no error.
	env.Devices = []collect.BlockDevice{device(t, "partition 1", espImage(t, nil))}
	if empty := collectFacts(t, env); empty.ESP != "partition 1" || empty.ESPError != "" || len(empty.BootFiles) != 0 {
		t.Errorf("an empty ESP: %+v", empty)
	}
	// The peer: mtools copies the same bytes out of the partition.
	for _, bf := range sb.BootFiles {
		out := filepath.Join(t.TempDir(), "out.efi")
		testutil.Run(t, time.Minute, "mcopy", "-i", esp, "::"+strings.TrimPrefix(bf.Path, "partition 2:"), out)
		if got := bootFile(t, out); got.Size != bf.Size || verified(got) != verified(bf) {
			t.Errorf("%s: we read %d bytes (verified %v), mtools %d (verified %v)", bf.Path, bf.Size, verified(bf), got.Size, verified(got))
		}
	}
}

// A tree's ESP is the directory mounted at /boot/efi, and its kernels are
// /boot/vmlinuz-*; a tree with neither has no ESP and no boot files.
func TestTreeESPAndKernels(t *testing.T) {
	dir := t.TempDir()
	key, cert := testKey(t, t.TempDir(), "db")
	grub := grubImage(t, t.TempDir())
	root := t.TempDir()
	signed := filepath.Join(t.TempDir(), "grubx64.efi")
	sbsign(t, key, cert, grub, signed)
	copyFile(t, signed, filepath.Join(root, "boot/efi/EFI/debian/grubx64.efi"))
	copyFile(t, grub, filepath.Join(root, "boot/vmlinuz-"+testRelease))
	collecttest.WriteTree(t, root, map[string]any{"boot/efi/EFI/debian/grub.cfg": "search\n", "boot/vmlinuz": collecttest.Symlink("vmlinuz-" + testRelease)})
	sb := collectFacts(t, collecttest.NewEnv(t, root, false))
	if sb.ESP != "/boot/efi" || len(sb.BootFiles) != 2 {
		t.Fatalf("%+v", sb)
	}
	if bf := sb.BootFiles[0]; bf.Path != "/boot/efi/EFI/debian/grubx64.efi" || !verified(bf) {
		t.Errorf("%+v", bf)
	}
	if bf := sb.BootFiles[1]; bf.Path != "/boot/vmlinuz-"+testRelease || bf.Role != facts.RoleKernel || len(bf.Signatures) != 0 {
		t.Errorf("%+v", bf)
	}

	sb = collectFacts(t, collecttest.NewEnv(t, dir, false))
	if sb.ESP != "" || len(sb.BootFiles) != 0 || len(sb.Modules) != 0 || len(sb.TrustedKeys) != 0 {
		t.Errorf("an empty tree: %+v", sb)
	}
}

// The ESP is the partition the firmware would boot from: the one of the
// ESP type, by GPT GUID or MBR byte, not the first FAT32 partition. A disk
// with none has no ESP, whatever its root holds at /boot/efi; an ESP this
// reader cannot read (FAT16) is an error, never skipped for the next.
func TestESPByPartitionType(t *testing.T) {
	grub, signed := signedGRUB(t)
	decoy := device(t, "partition 1", espImage(t, map[string]string{"/EFI/BOOT/BOOTX64.EFI": signed}))
	decoy.PartType = "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7" // Microsoft basic data
	real := device(t, "partition 2", espImage(t, map[string]string{"/EFI/BOOT/BOOTX64.EFI": grub}))

	root := t.TempDir()
	copyFile(t, signed, filepath.Join(root, "boot/efi/EFI/BOOT/BOOTX64.EFI"))
	env := collecttest.NewEnv(t, root, false)
	env.Devices = []collect.BlockDevice{decoy, real}
	sb := collectFacts(t, env)
	if sb.ESP != "partition 2" || sb.ESPError != "" || len(sb.BootFiles) != 1 || sb.BootFiles[0].Path != "partition 2:/EFI/BOOT/BOOTX64.EFI" || len(sb.BootFiles[0].Signatures) != 0 {
		t.Errorf("beside a FAT32 decoy of another type: ESP %q (%q), %+v", sb.ESP, sb.ESPError, sb.BootFiles)
	}

	mbr := real
	mbr.PartType = espMBRType
	env.Devices = []collect.BlockDevice{mbr}
	if sb := collectFacts(t, env); sb.ESP != "partition 2" || len(sb.BootFiles) != 1 {
		t.Errorf("an MBR ESP (type ef): %+v", sb)
	}

	env.Devices = []collect.BlockDevice{decoy}
	if sb := collectFacts(t, env); sb.ESP != "" || sb.ESPError != "" || len(sb.BootFiles) != 0 {
		t.Errorf("a disk with no ESP-typed partition, its root's /boot/efi filled: %+v", sb)
	}

	fat16 := filepath.Join(t.TempDir(), "esp16.vfat")
	testutil.Run(t, time.Minute, testutil.Tool(t, "mkfs.vfat", "dosfstools"), "-C", "-F", "16", "-n", "ESP", fat16, "32768")
	env.Devices = []collect.BlockDevice{device(t, "partition 1", fat16)}
	if sb := collectFacts(t, env); sb.ESP != "partition 1" || !strings.Contains(sb.ESPError, "FAT16") {
		t.Errorf("a FAT16 ESP: ESP %q error %q", sb.ESP, sb.ESPError)
	}
}

// A damaged FAT is an error naming the partition, never a partial list:
// a cluster chain that loops, a FAT larger than the bound.
func TestImageESPDamage(t *testing.T) {
	grub := grubImage(t, t.TempDir())
	for name, tc := range map[string]struct {
		edit func(b []byte)
		want string
	}{
		"loop": {func(b []byte) {
			fat := int(binary.LittleEndian.Uint16(b[14:])) * 512
			size := int(binary.LittleEndian.Uint32(b[36:])) * 512
			for _, at := range []int{fat, fat + size} {
				binary.LittleEndian.PutUint32(b[at+4*40:], 41)
				binary.LittleEndian.PutUint32(b[at+4*41:], 40)
			}
		}, "loops"},
		"huge FAT":       {func(b []byte) { binary.LittleEndian.PutUint32(b[36:], 1<<30) }, "more than the"},
		"root elsewhere": {func(b []byte) { binary.LittleEndian.PutUint32(b[44:], 9) }, "root directory at cluster 9"},
	} {
		esp := espImage(t, map[string]string{"/EFI/BOOT/BOOTX64.EFI": grub})
		data, err := os.ReadFile(esp)
		if err != nil {
			t.Fatal(err)
		}
		tc.edit(data)
		if err := os.WriteFile(esp, data, 0o644); err != nil {
			t.Fatal(err)
		}
		env := collecttest.NewEnv(t, t.TempDir(), false)
		env.Devices = []collect.BlockDevice{device(t, "partition 2", esp)}
		sb := collectFacts(t, env)
		if sb.ESP != "partition 2" || !strings.Contains(sb.ESPError, "partition 2") || !strings.Contains(sb.ESPError, tc.want) || len(sb.BootFiles) != 0 {
			t.Errorf("%s: ESP %q error %q files %+v, want an error with %q", name, sb.ESP, sb.ESPError, sb.BootFiles, tc.want)
		}
	}
}
