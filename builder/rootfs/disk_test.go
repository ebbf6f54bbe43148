package rootfs

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/target/diskimage"
)

func TestPrepareDiskDefaults(t *testing.T) {
	host := fakeHost(t, map[string]string{"etc/apt/sources.list.d/debian.sources": debianSources})
	for suite, kernel := range map[string]string{"bookworm": "linux-image-amd64", "jammy": "linux-image-generic"} {
		c, warns, err := prepare(t, host, map[string]interface{}{"suite": suite, "mirror": "http://mirror.example.test/x", "output_format": "disk", "image_size": "3G"})
		if err != nil {
			t.Fatalf("%s: %v", suite, err)
		}
		if len(warns) != 0 {
			t.Errorf("%s: warnings %v", suite, warns)
		}
		if c.DiskFormat != "qcow2" || c.KernelPackage != kernel || c.KernelCmdline != defaultKernelCmdline {
			t.Errorf("%s: disk_format %q kernel_package %q kernel_cmdline %q", suite, c.DiskFormat, c.KernelPackage, c.KernelCmdline)
		}
		args := strings.Join(mmdebstrapArgs(c, "ROOTFS"), " ")
		if !strings.Contains(args, "--include="+kernel+",grub-efi-amd64-bin,grub-pc-bin") {
			t.Errorf("%s: mmdebstrap does not install the kernel and GRUB: %s", suite, args)
		}
	}
}

func TestPrepareDiskRefusals(t *testing.T) {
	host := fakeHost(t, map[string]string{"etc/apt/sources.list.d/debian.sources": debianSources})
	_, _, err := prepare(t, host, map[string]interface{}{
		"suite": "bookworm", "output_format": "disk", "image_size": "100M",
		"disk_format": "vmdk", "kernel_package": "linux image", "kernel_cmdline": `quiet "$(reboot)"`,
	})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"image_size: \"100M\" is too small", "disk_format: unsupported \"vmdk\"", "kernel_package: invalid package", "kernel_cmdline:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	_, _, err = prepare(t, host, map[string]interface{}{"suite": "bookworm", "output_format": "disk"})
	if err == nil || !strings.Contains(err.Error(), "image_size is required") {
		t.Errorf("a disk without image_size: %v", err)
	}
	_, warns, err := prepare(t, host, map[string]interface{}{"suite": "bookworm", "output_format": "tar", "disk_format": "raw", "kernel_package": "linux-image-amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 2 || !strings.Contains(warns[0], "disk_format is ignored") {
		t.Errorf("warnings for disk fields on a tar: %v", warns)
	}
}

func TestBootstrapPackagesKeepAPinnedKernel(t *testing.T) {
	c := &Config{OutputFormat: "disk", KernelPackage: "linux-image-6.1.0-50-amd64=6.1.176-1", ExtraPackages: []string{"systemd", "grub-pc-bin=2.06-13+deb12u2"}}
	got := c.bootstrapPackages()
	want := []string{"systemd", "grub-pc-bin=2.06-13+deb12u2", "linux-image-6.1.0-50-amd64=6.1.176-1", "grub-efi-amd64-bin"}
	if !slices.Equal(got, want) {
		t.Errorf("packages %v, want %v", got, want)
	}
	c.OutputFormat = "qcow2"
	if got := c.bootstrapPackages(); !slices.Equal(got, c.ExtraPackages) {
		t.Errorf("a qcow2 gets boot packages: %v", got)
	}
}

// TestDiskLayoutAsSfdiskWritesIt lays out a disk, has the real sfdisk write
// the table, and reads it back.
func TestDiskLayoutAsSfdiskWritesIt(t *testing.T) {
	sfdisk := testutil.Tool(t, "sfdisk", "fdisk")
	l, err := newDiskLayout(1<<30, nil, diskIDs{})
	if err != nil {
		t.Fatal(err)
	}
	raw := filepath.Join(t.TempDir(), "disk.raw")
	must(t, createSparse(raw, l.Sectors*sectorSize))
	cmd := exec.Command(sfdisk, "--quiet", "--no-reread", "--no-tell-kernel", raw)
	cmd.Stdin = strings.NewReader(l.sfdiskScript())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sfdisk: %v\n%s", err, out)
	}
	parts, table := sfdiskJSON(t, sfdisk, raw)
	if !strings.EqualFold(table.ID, l.DiskGUID) {
		t.Errorf("disk GUID %s, want %s", table.ID, l.DiskGUID)
	}
	want := []struct {
		start, size int64
		typ, uuid   string
	}{
		{biosStart, biosSectors, typeBIOSBoot, l.BIOSPartUUID},
		{espStart, espSectors, typeESP, l.ESPPartUUID},
		{rootStart, l.RootSectors, typeRootX8664, l.RootPartUUID},
	}
	if len(parts) != len(want) {
		t.Fatalf("partitions %+v", parts)
	}
	for i, w := range want {
		p := parts[i]
		if p.Start != w.start || p.Size != w.size || !strings.EqualFold(p.Type, w.typ) || !strings.EqualFold(p.UUID, w.uuid) {
			t.Errorf("partition %d is %+v, want %+v", i+1, p, w)
		}
	}
	root := parts[2]
	if root.Start%mib != 0 || root.Size%mib != 0 || root.Start+root.Size > l.Sectors-gptTailSectors {
		t.Errorf("root partition %+v is unaligned or runs into the backup GPT of a %d-sector disk", root, l.Sectors)
	}
	if _, err := newDiskLayout(rootStart*sectorSize, nil, diskIDs{}); err == nil {
		t.Error("a disk with no room for the root was laid out")
	}
	other, _ := newDiskLayout(1<<30, nil, diskIDs{})
	if other.RootFSUUID == l.RootFSUUID || other.DiskGUID == l.DiskGUID {
		t.Error("two disks got the same identifiers")
	}
}

type sfdiskPart struct {
	Start int64  `json:"start"`
	Size  int64  `json:"size"`
	Type  string `json:"type"`
	UUID  string `json:"uuid"`
}

type sfdiskTable struct {
	ID         string       `json:"id"`
	Partitions []sfdiskPart `json:"partitions"`
}

func sfdiskJSON(t *testing.T, sfdisk, raw string) ([]sfdiskPart, sfdiskTable) {
	t.Helper()
	out, err := exec.Command(sfdisk, "--json", raw).Output()
	if err != nil {
		t.Fatalf("sfdisk --json: %v", err)
	}
	var doc struct {
		PartitionTable sfdiskTable `json:"partitiontable"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.PartitionTable.Partitions, doc.PartitionTable
}

// fakeGrub returns a boot.img and a core.img shaped like GRUB's: a boot
// sector with its signature, and three sectors whose first (diskboot.img)
// ends in a blocklist.
func fakeGrub() (boot, core []byte) {
	boot = bytes.Repeat([]byte{0xb0}, sectorSize)
	boot[0x1fe], boot[0x1ff] = 0x55, 0xaa
	boot[bootDriveCheck], boot[bootDriveCheck+1] = 0xeb, 0x05
	core = bytes.Repeat([]byte{0xc0}, 2*sectorSize+100)
	return boot, core
}

func TestInstallBIOSBoot(t *testing.T) {
	boot, core := fakeGrub()
	disk := make([]byte, 4*mib*sectorSize)
	// A protective MBR: the partition table and signature to keep.
	pmbr := disk[:sectorSize]
	pmbr[0x1b8], pmbr[0x1be+4], pmbr[0x1fe], pmbr[0x1ff] = 0x5a, 0xee, 0x55, 0xaa
	pmbr[0x10] = 0x42 // in the BPB
	d := &memDisk{b: disk}
	if err := installBIOSBoot(d, boot, core, biosStart, biosSectors); err != nil {
		t.Fatal(err)
	}
	got := d.b[:sectorSize]
	if lba := binary.LittleEndian.Uint64(got[bootKernelLBA:]); lba != biosStart {
		t.Errorf("boot sector points core.img at %d, want %d", lba, biosStart)
	}
	if got[bootDrive] != 0xff || got[bootDriveCheck] != 0x90 || got[bootDriveCheck+1] != 0x90 {
		t.Errorf("boot drive %#x, drive check % x", got[bootDrive], got[bootDriveCheck:bootDriveCheck+2])
	}
	if got[0x1b8] != 0x5a || got[0x1be+4] != 0xee || got[0x1fe] != 0x55 || got[0x10] != 0x42 {
		t.Error("the protective MBR's partition table or BPB was not kept")
	}
	if got[0] != 0xb0 {
		t.Error("boot.img's code was not written")
	}
	c := d.b[biosStart*sectorSize:]
	list := sectorSize - bootListSize
	if start, n, seg := binary.LittleEndian.Uint64(c[list:]), binary.LittleEndian.Uint16(c[list+8:]), binary.LittleEndian.Uint16(c[list+10:]); start != biosStart+1 || n != 2 || seg != coreLoadSegment {
		t.Errorf("core.img's blocklist: start %d, %d sectors, segment %#x; want %d, 2, %#x", start, n, seg, biosStart+1, coreLoadSegment)
	}
	if !bytes.Equal(c[list-bootListSize:list], make([]byte, bootListSize)) {
		t.Error("the blocklist has no terminator")
	}
	if !bytes.Equal(c[sectorSize:2*sectorSize+100], core[sectorSize:]) || c[2*sectorSize+100] != 0 {
		t.Error("core.img's body is not where the blocklist says")
	}

	if err := installBIOSBoot(&memDisk{b: make([]byte, len(disk))}, boot, core, biosStart, biosSectors); err == nil {
		t.Error("installed over a disk with no protective MBR")
	}
	big := make([]byte, (biosSectors+1)*sectorSize)
	if err := installBIOSBoot(&memDisk{b: slices.Clone(disk)}, boot, big, biosStart, biosSectors); err == nil {
		t.Error("installed a core.img larger than the BIOS boot partition")
	}
}

type memDisk struct{ b []byte }

func (m *memDisk) ReadAt(p []byte, off int64) (int, error) { return copy(p, m.b[off:]), nil }
func (m *memDisk) WriteAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > int64(len(m.b)) {
		return 0, fmt.Errorf("write past the end")
	}
	return copy(m.b[off:], p), nil
}

func TestGrubConfig(t *testing.T) {
	d, err := parseGrubDefaults("GRUB_TIMEOUT=1\nGRUB_DISTRIBUTOR=Debian\nGRUB_CMDLINE_LINUX=console=ttyS0,115200n8  systemd.unified_cgroup_hierarchy=1\nGRUB_CMDLINE_LINUX_DEFAULT=quiet\nGRUB_TERMINAL=console serial\nGRUB_TERMINAL_INPUT=\nGRUB_TERMINAL_OUTPUT=\nGRUB_SERIAL_COMMAND=serial --unit=0 --speed=115200\n")
	if err != nil {
		t.Fatal(err)
	}
	l := &diskLayout{RootFSUUID: "0b2a4f3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"}
	cfg := grubConfig(d, l, []kernel{{"6.1.0-57-amd64"}, {"6.1.0-49-amd64"}})
	for _, want := range []string{
		"set timeout=1\n",
		"serial --unit=0 --speed=115200\nterminal_input console serial\nterminal_output console serial\n",
		"search --no-floppy --fs-uuid --set=root 0b2a4f3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b\n",
		"\tlinux /boot/vmlinuz-6.1.0-57-amd64 root=UUID=0b2a4f3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b ro console=ttyS0,115200n8 systemd.unified_cgroup_hierarchy=1 quiet\n",
		"\tinitrd /boot/initrd.img-6.1.0-57-amd64\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("grub.cfg lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Index(cfg, "6.1.0-57") > strings.Index(cfg, "6.1.0-49") {
		t.Error("the newest kernel is not the first entry")
	}
	for _, bad := range []string{"GRUB_CMDLINE_LINUX=quiet; reboot\n", "GRUB_CMDLINE_LINUX=$(x)\n", "GRUB_TIMEOUT=soon\n", "GRUB_OTHER=1\n"} {
		if _, err := parseGrubDefaults(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestGrubDefaultsScriptSourcesLikeUpdateGrub runs the script that reads an
// image's GRUB settings against a tree of its own: /etc/default/grub first,
// then the drop-ins in name order, a later assignment winning.
func TestGrubDefaultsScriptSourcesLikeUpdateGrub(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"etc/default/grub":               fmt.Sprintf(defaultGrubFile, "Debian", defaultKernelCmdline),
		"etc/default/grub.d/60-a.cfg":    `GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX systemd.unified_cgroup_hierarchy=1"` + "\n",
		"etc/default/grub.d/70-b.cfg":    `GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX modprobe.blacklist=nouveau"` + "\nGRUB_TIMEOUT=3\n",
		"etc/default/grub.d/80-c.notcfg": "GRUB_TIMEOUT=9\n",
	}
	for name, body := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	script := strings.ReplaceAll(grubDefaultsScript, "/etc/default/", dir+"/etc/default/")
	out, err := exec.Command("/bin/sh", "-c", script).Output()
	if err != nil {
		t.Fatal(err)
	}
	d, err := parseGrubDefaults(string(out))
	if err != nil {
		t.Fatal(err)
	}
	if want := defaultKernelCmdline + " systemd.unified_cgroup_hierarchy=1 modprobe.blacklist=nouveau"; d.Cmdline != want || d.Timeout != "3" || d.Distributor != "Debian" {
		t.Errorf("read %+v; want cmdline %q and timeout 3", d, want)
	}
}

func TestWriteFstab(t *testing.T) {
	rootfs := fakeRootfs(t)
	must(t, os.WriteFile(filepath.Join(rootfs, "etc/fstab"), []byte("# UNCONFIGURED FSTAB FOR BASE SYSTEM"), 0o644))
	root, err := os.OpenRoot(rootfs)
	must(t, err)
	defer root.Close()
	l := &diskLayout{RootFSUUID: "0b2a4f3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b", ESPVolumeID: "ABCD1234"}
	must(t, writeFstab(root, l))
	got, _ := os.ReadFile(filepath.Join(rootfs, "etc/fstab"))
	for _, want := range []string{"# UNCONFIGURED FSTAB FOR BASE SYSTEM\n", "UUID=0b2a4f3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b / ext4 ", "UUID=ABCD-1234 /boot/efi vfat "} {
		if !strings.Contains(string(got), want) {
			t.Errorf("fstab lacks %q:\n%s", want, got)
		}
	}
	if err := writeFstab(root, l); err == nil || !strings.Contains(err.Error(), "already mounts /") {
		t.Errorf("a second root entry: %v", err)
	}
}

func TestPrepareFirstBoot(t *testing.T) {
	rootfs := fakeRootfs(t)
	for name, body := range map[string]string{
		"etc/machine-id":                    "0123456789abcdef0123456789abcdef\n",
		"var/lib/dbus/machine-id":           "0123456789abcdef0123456789abcdef\n",
		"etc/ssh/ssh_host_ed25519_key":      "PRIVATE",
		"etc/ssh/ssh_host_ed25519_key.pub":  "ssh-ed25519 AAAA",
		"etc/ssh/ssh_host_rsa_key":          "PRIVATE",
		"etc/ssh/sshd_config":               "PermitRootLogin no\n",
		"etc/ssh/ssh_host_keys_readme.txt":  "kept",
		"usr/sbin/sshd":                     "",
		"usr/bin/systemd-repart":            "",
		"etc/systemd/system/unrelated.conf": "",
	} {
		p := filepath.Join(rootfs, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o600))
	}
	root, err := os.OpenRoot(rootfs)
	must(t, err)
	defer root.Close()
	must(t, prepareFirstBoot(root, packersdk.TestUi(t)))

	if b, err := os.ReadFile(filepath.Join(rootfs, "etc/machine-id")); err != nil || len(b) != 0 {
		t.Errorf("/etc/machine-id is %q (%v), want empty", b, err)
	}
	if l, err := os.Readlink(filepath.Join(rootfs, "var/lib/dbus/machine-id")); err != nil || l != "/etc/machine-id" {
		t.Errorf("/var/lib/dbus/machine-id: %q %v", l, err)
	}
	keys, _ := filepath.Glob(filepath.Join(rootfs, "etc/ssh/ssh_host_*_key*"))
	if len(keys) != 0 {
		t.Errorf("host keys left: %v", keys)
	}
	for _, kept := range []string{"etc/ssh/sshd_config", "etc/ssh/ssh_host_keys_readme.txt"} {
		if _, err := os.Stat(filepath.Join(rootfs, kept)); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
	for link, unit := range map[string]string{
		"etc/systemd/system/ssh.service.wants/gpuhost-ssh-hostkeys.service": "/etc/systemd/system/gpuhost-ssh-hostkeys.service",
		"etc/systemd/system/local-fs.target.wants/gpuhost-growroot.service": "/etc/systemd/system/gpuhost-growroot.service",
	} {
		if got, err := os.Readlink(filepath.Join(rootfs, link)); err != nil || got != unit {
			t.Errorf("%s -> %q (%v), want %s", link, got, err, unit)
		}
		if _, err := os.Stat(filepath.Join(rootfs, unit)); err != nil {
			t.Error(err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(rootfs, "etc/repart.d/50-gpuhost-root.conf")); !strings.Contains(string(b), "Type=root") {
		t.Errorf("repart.d: %q", b)
	}
	// Twice is the same as once.
	must(t, prepareFirstBoot(root, packersdk.TestUi(t)))
}

// TestDiskStepsWriteADiskTheScannerReads runs the disk, bootloader and
// output steps on a small tree with stand-in GRUB images, with the real
// sfdisk, mkfs.vfat, mtools and mkfs.ext4, and checks the result as fsck
// and gpuhost's own disk reader see it. That GRUB then boots it is the
// images package's boot test.
func TestDiskStepsWriteADiskTheScannerReads(t *testing.T) {
	sfdisk := testutil.Tool(t, "sfdisk", "fdisk")
	for _, tool := range [][2]string{{"mkfs.vfat", "dosfstools"}, {"fsck.vfat", "dosfstools"}, {"mcopy", "mtools"}, {"mdir", "mtools"}, {"mkfs.ext4", "e2fsprogs"}, {"e2fsck", "e2fsprogs"}} {
		testutil.Tool(t, tool[0], tool[1])
	}
	rootfs := fakeRootfs(t)
	boot, core := fakeGrub()
	files := map[string][]byte{
		grubCoreEFI:  []byte("MZ stand-in for GRUB's EFI image"),
		grubBootBIOS: boot,
		grubCoreBIOS: core,
		"etc/hello":  []byte("hello from the root\n"),
	}
	for name, body := range files {
		p := filepath.Join(rootfs, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, body, 0o644))
	}
	out := t.TempDir()
	c := &Config{OutputFormat: "disk", DiskFormat: "raw", ImageSize: "300M", OutputDir: out, WorkDir: out}
	l, err := newDiskLayout(300<<20, nil, diskIDs{})
	must(t, err)
	state := testState(rootfs)
	state.Put(stateConfig, c)
	state.Put(stateDisk, l)
	for _, s := range []multistep.Step{&stepDisk{}, &stepBootloader{}, &stepDiskOutput{}} {
		if s.Run(context.Background(), state) != multistep.ActionContinue {
			t.Fatalf("%T: %v", s, state.Get("error"))
		}
	}
	raw := filepath.Join(out, "disk.raw")
	if got := state.Get(stateFiles).([]string); !slices.Equal(got, []string{raw}) {
		t.Errorf("artifact files %v", got)
	}
	if left, _ := filepath.Glob(filepath.Join(out, "*.tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if parts, _ := sfdiskJSON(t, sfdisk, raw); len(parts) != 3 {
		t.Errorf("partitions: %+v", parts)
	}
	esp := fmt.Sprintf("%s@@%d", raw, espStart*sectorSize)
	dir := testutil.Run(t, time.Minute, "mdir", "-i", esp, "-b", "::/EFI/BOOT")
	if !strings.Contains(dir, "BOOTX64.EFI") {
		t.Errorf("the ESP has no \\EFI\\BOOT\\BOOTX64.EFI:\n%s", dir)
	}
	testutil.Run(t, time.Minute, "e2fsck", "-fn", fmt.Sprintf("%s?offset=%d", raw, rootStart*sectorSize))

	img, err := diskimage.Open(raw)
	if err != nil {
		t.Fatalf("gpuhost's disk reader: %v", err)
	}
	defer img.Close()
	if img.Offset != rootStart*sectorSize {
		t.Errorf("the scanner reads the file system at %d, want the root partition at %d", img.Offset, rootStart*sectorSize)
	}
	if b, err := img.FS().ReadFile("/etc/hello"); err != nil || string(b) != "hello from the root\n" {
		t.Errorf("/etc/hello through the scanner: %q %v", b, err)
	}
	mbr := make([]byte, sectorSize)
	f, err := os.Open(raw)
	must(t, err)
	defer f.Close()
	_, err = f.ReadAt(mbr, 0)
	must(t, err)
	if binary.LittleEndian.Uint64(mbr[bootKernelLBA:]) != biosStart || mbr[0x1c2] != 0xee {
		t.Error("the boot sector does not point at core.img, or lost the protective MBR")
	}
}

// TestDiskPlan: the GRUB defaults (and an encrypted root's crypttab) are
// written before the provisioners, which add to them and record them in the
// manifest; the boot configuration and
// the disk come after everything is unmounted.
func TestDiskPlan(t *testing.T) {
	var names []string
	for _, s := range plan(&Config{OutputFormat: "disk"}) {
		names = append(names, s.name)
	}
	want := []string{"dirs", "cache-lookup", "mmdebstrap", "cache-save", "grub-defaults", "policy-rc.d", "mount", "provision", "unmount", "first-boot", "boot-config", "tree-digest", "disk", "bootloader", "disk-output"}
	if !slices.Equal(names, want) {
		t.Errorf("disk steps %v, want %v", names, want)
	}
	// An encrypted root's crypttab is written before the provisioners,
	// whose manifest records it, and its initramfs made after them.
	names = nil
	for _, s := range plan(&Config{OutputFormat: "disk", Encryption: EncryptionConfig{LUKS2: true}}) {
		names = append(names, s.name)
	}
	want = []string{"dirs", "cache-lookup", "mmdebstrap", "cache-save", "grub-defaults", "luks-crypttab", "policy-rc.d", "mount", "provision", "luks-initramfs", "unmount", "first-boot", "boot-config", "tree-digest", "disk", "bootloader", "disk-output"}
	if !slices.Equal(names, want) {
		t.Errorf("encrypted disk steps %v, want %v", names, want)
	}
	names = nil
	for _, s := range plan(&Config{OutputFormat: "qcow2"}) {
		names = append(names, s.name)
	}
	if slices.Contains(names, "grub-defaults") || names[len(names)-1] != "pack" {
		t.Errorf("qcow2 steps %v", names)
	}
}

func TestGrubDefaultsWrittenOnlyWhenMissing(t *testing.T) {
	rootfs := fakeRootfs(t)
	state := testState(rootfs)
	state.Put(stateConfig, &Config{Distribution: "debian", KernelCmdline: "console=ttyS0"})
	if (&stepGrubDefaults{}).Run(context.Background(), state) != multistep.ActionContinue {
		t.Fatal(state.Get("error"))
	}
	b, err := os.ReadFile(filepath.Join(rootfs, "etc/default/grub"))
	if err != nil || !strings.Contains(string(b), "GRUB_CMDLINE_LINUX=\"console=ttyS0\"\n") || !strings.Contains(string(b), "GRUB_DISTRIBUTOR=Debian\n") {
		t.Fatalf("/etc/default/grub: %q %v", b, err)
	}
	must(t, os.WriteFile(filepath.Join(rootfs, "etc/default/grub"), []byte("GRUB_CMDLINE_LINUX=\"quiet\"\n"), 0o644))
	if (&stepGrubDefaults{}).Run(context.Background(), state) != multistep.ActionContinue {
		t.Fatal(state.Get("error"))
	}
	if b, _ := os.ReadFile(filepath.Join(rootfs, "etc/default/grub")); string(b) != "GRUB_CMDLINE_LINUX=\"quiet\"\n" {
		t.Errorf("the image's own /etc/default/grub was replaced: %q", b)
	}
}

// The qcow2 qemu-img writes says the compression asked for, and the
// scanner reads the same files out of it either way.
func TestQCOW2ConvertArgsWriteTheCompressionAsked(t *testing.T) {
	qemuImg := testutil.Tool(t, "qemu-img", "qemu-utils")
	mkfs := testutil.Tool(t, "mkfs.ext4", "e2fsprogs")
	tree := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(tree, "etc"), 0o755))
	body := strings.Repeat("a line the clusters compress\n", 4096)
	must(t, os.WriteFile(filepath.Join(tree, "etc/hello"), []byte(body), 0o644))
	dir := t.TempDir()
	raw := filepath.Join(dir, "fs.raw")
	testutil.Run(t, time.Minute, mkfs, "-q", "-F", "-d", tree, raw, "64M")
	for _, ct := range qcow2Compressions {
		t.Run(ct, func(t *testing.T) {
			out := filepath.Join(dir, ct+".qcow2")
			testutil.Run(t, time.Minute, qemuImg, qcow2ConvertArgs(&Config{QCOW2Compression: ct}, raw, out)...)
			var info struct {
				Format   string `json:"format"`
				Specific struct {
					Data struct {
						Compression string `json:"compression-type"`
					} `json:"data"`
				} `json:"format-specific"`
			}
			must(t, json.Unmarshal([]byte(testutil.Run(t, time.Minute, qemuImg, "info", "--output=json", out)), &info))
			if info.Format != "qcow2" || info.Specific.Data.Compression != ct {
				t.Errorf("qemu-img info: format %q compression-type %q, want qcow2 %q", info.Format, info.Specific.Data.Compression, ct)
			}
			img, err := diskimage.Open(out)
			if err != nil {
				t.Fatalf("gpuhost's disk reader: %v", err)
			}
			defer img.Close()
			if b, err := img.FS().ReadFile("/etc/hello"); err != nil || string(b) != body {
				t.Errorf("/etc/hello through the scanner: %d bytes, %v", len(b), err)
			}
		})
	}
}
