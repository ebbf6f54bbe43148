package rootfs

// How the rootfs builder makes a bootable disk
//
// A `disk` output is assembled in plain files, with no loop device, no mount
// and nothing run against the build machine's own disks or boot loader:
//
//   - sfdisk writes a GPT into a sparse file the size of the disk: a BIOS boot
//     partition for GRUB's core.img, an EFI system partition, and the root,
//     typed as the x86-64 root of the Discoverable Partitions Specification so
//     that systemd-repart finds it at first boot;
//   - mkfs.vfat and mtools make the EFI system partition in a file of its own,
//     which is then copied to its offset;
//   - mkfs.ext4 -d writes the rootfs straight into the root partition
//     (-E offset=), as the raw and qcow2 formats already do for a bare file system;
//   - GRUB's images come from the image's own grub-efi-amd64-bin and
//     grub-pc-bin, made by grub-mkimage run in the rootfs with chroot, so the
//     boot loader matches the image and not the build machine; the BIOS boot
//     sector and core.img are then written where grub-bios-setup would put
//     them (installBIOSBoot).
//
// A build that stops halfway leaves only files in its work and output
// directories, which the dirs step removes as for every other format.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"pault.ag/go/debian/version"
)

// stateDisk holds the *diskLayout of a disk build.
const stateDisk = "disk_layout"

// The disk's layout, in 512-byte sectors. Partitions start on 1 MiB
// boundaries, as partitioning tools align them.
const (
	sectorSize  = 512
	biosStart   = 2048
	biosSectors = 2048
	espStart    = biosStart + biosSectors
	espSectors  = (64 << 20) / sectorSize
	rootStart   = espStart + espSectors
	// The backup GPT at the end of the disk: 32 sectors of entries and
	// its header.
	gptTailSectors = 33
	mib            = (1 << 20) / sectorSize
)

// GPT partition type GUIDs.
const (
	typeBIOSBoot = "21686148-6449-6E6F-744E-656564454649"
	typeESP      = "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
	// The Discoverable Partitions Specification's x86-64 root, which
	// systemd-repart matches to grow the root at first boot.
	typeRootX8664 = "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709"
	// A Linux file system: the /boot of a disk whose root is encrypted.
	typeLinuxData = "0FC63DAF-8483-4772-8E79-3D69D8477DE4"
)

// diskLayout is one disk: its size and the identifiers its partitions and
// file systems get. They are random per build: a disk made twice from the
// same tree must not be mistaken for the other by UUID.
type diskLayout struct {
	// Sectors is the size of the disk.
	Sectors int64
	// RootStart is where the root partition starts: rootStart, or after
	// the /boot partition of an encrypted disk.
	RootStart int64
	// RootSectors is the size of the root partition, from RootStart.
	RootSectors  int64
	DiskGUID     string
	BIOSPartUUID string
	ESPPartUUID  string
	RootPartUUID string
	// RootFSUUID is the ext4 file system's UUID, which fstab and GRUB name.
	RootFSUUID string
	// ESPVolumeID is the FAT volume id as eight hex digits; fstab writes it
	// as XXXX-XXXX.
	ESPVolumeID string
	// LUKS is the encryption of the root, nil when it is plain ext4. An
	// encrypted disk has a /boot partition of BootSectors at rootStart,
	// since GRUB cannot read the encrypted root.
	LUKS         *luksRoot
	BootSectors  int64
	BootPartUUID string
	BootFSUUID   string
}

// bootStart is where the /boot partition of an encrypted disk starts.
const bootStart = rootStart

// newDiskLayout lays out a disk of size bytes, with the root encrypted by
// luks unless it is nil.
func newDiskLayout(size int64, luks *luksRoot) (*diskLayout, error) {
	sectors := size / sectorSize
	l := &diskLayout{Sectors: sectors, RootStart: rootStart, LUKS: luks}
	if luks != nil {
		l.BootSectors = bootSectors
		l.RootStart = bootStart + bootSectors
	}
	root := (sectors - gptTailSectors - l.RootStart) / mib * mib
	// An encrypted root also holds its 16 MiB LUKS2 header.
	if root < mib || (luks != nil && root < 32*mib) {
		return nil, fmt.Errorf("a disk of %d bytes leaves no room for the root partition after the first %d MiB", size, l.RootStart/mib)
	}
	l.RootSectors = root
	ids := []*string{&l.DiskGUID, &l.BIOSPartUUID, &l.ESPPartUUID, &l.RootPartUUID, &l.RootFSUUID}
	if luks != nil {
		// The /boot file system's UUID was chosen with the key: the
		// initramfs's crypttab, made before the disk, names it.
		l.BootFSUUID = luks.BootFSUUID
		ids = append(ids, &l.BootPartUUID)
	}
	for _, p := range ids {
		u, err := randomUUID()
		if err != nil {
			return nil, err
		}
		*p = u
	}
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	l.ESPVolumeID = fmt.Sprintf("%08X", binary.BigEndian.Uint32(id[:]))
	return l, nil
}

// randomUUID returns a version 4 UUID.
func randomUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

// sfdiskScript is the partition table in sfdisk's input format.
func (l *diskLayout) sfdiskScript() string {
	var b strings.Builder
	fmt.Fprintf(&b, "label: gpt\nlabel-id: %s\nunit: sectors\nfirst-lba: %d\n", l.DiskGUID, biosStart)
	fmt.Fprintf(&b, "start=%d, size=%d, type=%s, uuid=%s, name=\"bios\"\n", biosStart, biosSectors, typeBIOSBoot, l.BIOSPartUUID)
	fmt.Fprintf(&b, "start=%d, size=%d, type=%s, uuid=%s, name=\"esp\"\n", espStart, espSectors, typeESP, l.ESPPartUUID)
	if l.LUKS != nil {
		fmt.Fprintf(&b, "start=%d, size=%d, type=%s, uuid=%s, name=\"boot\"\n", bootStart, l.BootSectors, typeLinuxData, l.BootPartUUID)
	}
	fmt.Fprintf(&b, "start=%d, size=%d, type=%s, uuid=%s, name=\"root\"\n", l.RootStart, l.RootSectors, typeRootX8664, l.RootPartUUID)
	return b.String()
}

// espFstabID is the ESP's volume id as fstab and /dev/disk/by-uuid name it.
func (l *diskLayout) espFstabID() string { return l.ESPVolumeID[:4] + "-" + l.ESPVolumeID[4:] }

// kernel is one kernel the image boots: /boot/vmlinuz-Release with its
// /boot/initrd.img-Release.
type kernel struct{ Release string }

// imageKernels returns the kernels in the rootfs's /boot that have an
// initramfs, newest first.
func imageKernels(root *os.Root) ([]kernel, error) {
	entries, err := fs.ReadDir(root.FS(), "boot")
	if err != nil {
		return nil, fmt.Errorf("reading /boot: %w", err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = e.Type().IsRegular()
	}
	var ks []kernel
	for name, regular := range names {
		rel, ok := strings.CutPrefix(name, "vmlinuz-")
		if ok && regular && names["initrd.img-"+rel] && releaseRE.MatchString(rel) {
			ks = append(ks, kernel{rel})
		}
	}
	slices.SortFunc(ks, func(a, b kernel) int { return compareReleases(b.Release, a.Release) })
	return ks, nil
}

// releaseRE is a kernel release that may go into grub.cfg unquoted.
var releaseRE = regexp.MustCompile(`^[0-9][A-Za-z0-9.+_~-]*$`)

// compareReleases orders kernel releases as dpkg orders versions.
func compareReleases(a, b string) int {
	va, ea := version.Parse(a)
	vb, eb := version.Parse(b)
	if ea == nil && eb == nil {
		if c := version.Compare(va, vb); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}

// grubDefaults is the GRUB configuration of the image as update-grub reads
// it: /etc/default/grub, then /etc/default/grub.d/*.cfg.
type grubDefaults struct {
	Timeout       string
	Distributor   string
	Cmdline       string
	CmdlineDef    string
	Terminal      string
	TerminalIn    string
	TerminalOut   string
	SerialCommand string
}

// defaultGrubFile is /etc/default/grub for an image that has none (GRUB's
// -bin packages do not ship it). Its keys are those of Debian's own file,
// so that update-grub on the booted host, once grub-pc or grub-efi is
// installed, reads what this grub.cfg was made from.
const defaultGrubFile = `# Written by the gpuhost-rootfs builder (output_format "disk"): the
# settings the image's /boot/grub/grub.cfg was made from. update-grub reads
# this file and /etc/default/grub.d/*.cfg the same way.
GRUB_DEFAULT=0
GRUB_TIMEOUT=1
GRUB_DISTRIBUTOR=%s
GRUB_CMDLINE_LINUX_DEFAULT=""
GRUB_CMDLINE_LINUX="%s"
GRUB_TERMINAL="console serial"
GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"
`

// grubDefaultsScript prints the variables grub-mkconfig uses, after
// sourcing the files it sources, one NAME=value a line.
const grubDefaultsScript = `set -e
unset GRUB_TIMEOUT GRUB_DISTRIBUTOR GRUB_CMDLINE_LINUX GRUB_CMDLINE_LINUX_DEFAULT GRUB_TERMINAL GRUB_TERMINAL_INPUT GRUB_TERMINAL_OUTPUT GRUB_SERIAL_COMMAND
if [ -f /etc/default/grub ]; then . /etc/default/grub; fi
for f in /etc/default/grub.d/*.cfg; do
	if [ -e "$f" ]; then . "$f"; fi
done
for v in GRUB_TIMEOUT GRUB_DISTRIBUTOR GRUB_CMDLINE_LINUX GRUB_CMDLINE_LINUX_DEFAULT GRUB_TERMINAL GRUB_TERMINAL_INPUT GRUB_TERMINAL_OUTPUT GRUB_SERIAL_COMMAND; do
	eval "printf '%s=%s\n' $v \"\${$v-}\""
done
`

// parseGrubDefaults reads grubDefaultsScript's output. Every value must be
// one that grub.cfg can carry as it is: GRUB's script language would read
// a quote, $ or ; in them.
func parseGrubDefaults(out string) (*grubDefaults, error) {
	d := &grubDefaults{}
	fields := map[string]*string{
		"GRUB_TIMEOUT": &d.Timeout, "GRUB_DISTRIBUTOR": &d.Distributor,
		"GRUB_CMDLINE_LINUX": &d.Cmdline, "GRUB_CMDLINE_LINUX_DEFAULT": &d.CmdlineDef,
		"GRUB_TERMINAL": &d.Terminal, "GRUB_TERMINAL_INPUT": &d.TerminalIn,
		"GRUB_TERMINAL_OUTPUT": &d.TerminalOut, "GRUB_SERIAL_COMMAND": &d.SerialCommand,
	}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		name, val, ok := strings.Cut(line, "=")
		p, known := fields[name]
		if !ok || !known {
			return nil, fmt.Errorf("reading the image's GRUB defaults: unexpected line %q", line)
		}
		val = strings.Join(strings.Fields(val), " ")
		if !cmdlineRE.MatchString(val) {
			return nil, fmt.Errorf("the image's %s is %q: grub.cfg would read its quotes, $ or other characters as script", name, val)
		}
		*p = val
	}
	if d.Timeout == "" {
		d.Timeout = "5"
	}
	if _, err := strconv.Atoi(d.Timeout); err != nil {
		return nil, fmt.Errorf("the image's GRUB_TIMEOUT is %q, not a number of seconds", d.Timeout)
	}
	if d.Distributor == "" {
		d.Distributor = "Linux"
	}
	return d, nil
}

// terminals returns GRUB's input and output terminals, as grub-mkconfig
// derives them from GRUB_TERMINAL and its _INPUT and _OUTPUT variants.
func (d *grubDefaults) terminals() (in, out string) {
	in, out = d.TerminalIn, d.TerminalOut
	if in == "" {
		in = d.Terminal
	}
	if out == "" {
		out = d.Terminal
	}
	return in, out
}

// grubConfig renders /boot/grub/grub.cfg: one entry per kernel, the newest
// first and the default, each with the root by UUID and the command line
// update-grub would give it.
func grubConfig(d *grubDefaults, l *diskLayout, kernels []kernel) string {
	var b strings.Builder
	b.WriteString("# Written by the gpuhost-rootfs builder from /etc/default/grub and\n")
	b.WriteString("# /etc/default/grub.d/*.cfg, as update-grub would; update-grub on the\n")
	b.WriteString("# booted host writes its own in its place.\n")
	fmt.Fprintf(&b, "set default=0\nset timeout=%s\n", d.Timeout)
	in, out := d.terminals()
	if strings.Contains(in+" "+out, "serial") {
		cmd := d.SerialCommand
		if cmd == "" {
			cmd = "serial"
		}
		fmt.Fprintf(&b, "%s\n", cmd)
	}
	if in != "" {
		fmt.Fprintf(&b, "terminal_input %s\n", in)
	}
	if out != "" {
		fmt.Fprintf(&b, "terminal_output %s\n", out)
	}
	fmt.Fprintf(&b, "search --no-floppy --fs-uuid --set=root %s\n", l.grubFSUUID())
	args := strings.TrimSpace("ro " + d.Cmdline + " " + d.CmdlineDef)
	dir := l.grubBootDir()
	for _, k := range kernels {
		fmt.Fprintf(&b, "\nmenuentry '%s GNU/Linux, with Linux %s' --id 'gnulinux-%s' {\n", d.Distributor, k.Release, k.Release)
		b.WriteString("\tinsmod part_gpt\n\tinsmod ext2\n\tinsmod gzio\n")
		fmt.Fprintf(&b, "\techo 'Loading Linux %s ...'\n", k.Release)
		fmt.Fprintf(&b, "\tlinux %s/vmlinuz-%s root=UUID=%s %s\n", dir, k.Release, l.RootFSUUID, args)
		b.WriteString("\techo 'Loading initial ramdisk ...'\n")
		fmt.Fprintf(&b, "\tinitrd %s/initrd.img-%s\n}\n", dir, k.Release)
	}
	return b.String()
}

// grubLoadConfig is the configuration built into GRUB's core images: find
// the root by its UUID, then read /boot/grub/grub.cfg from it.
func grubLoadConfig(l *diskLayout) string {
	return fmt.Sprintf("search --no-floppy --fs-uuid --set=root %s\nset prefix=($root)%s/grub\n", l.grubFSUUID(), l.grubBootDir())
}

// grubFSUUID is the file system GRUB reads the kernel from: the root, or
// the /boot partition of an encrypted disk.
func (l *diskLayout) grubFSUUID() string {
	if l.LUKS != nil {
		return l.BootFSUUID
	}
	return l.RootFSUUID
}

// grubBootDir is where /boot is on the file system GRUB reads.
func (l *diskLayout) grubBootDir() string {
	if l.LUKS != nil {
		return ""
	}
	return "/boot"
}

// GRUB's core images: the modules built into each, enough to find the root
// by UUID on a GPT disk and read grub.cfg; grub.cfg loads the rest from
// /boot/grub/<platform>, where grub-install would also put them.
var (
	grubEFIModules  = []string{"part_gpt", "part_msdos", "fat", "ext2", "search", "search_fs_uuid", "normal", "configfile", "linux", "echo", "test", "gzio", "serial", "terminal", "efi_gop", "efi_uga", "all_video", "boot"}
	grubBIOSModules = []string{"biosdisk", "part_gpt", "part_msdos", "ext2", "search", "search_fs_uuid", "normal", "configfile", "linux", "echo", "test", "gzio", "serial", "terminal", "boot"}
)

// Where the boot-config step leaves GRUB's images in the rootfs: the
// places grub-install uses, so that a later grub-install replaces them.
const (
	grubCoreEFI  = "boot/grub/x86_64-efi/core.efi"
	grubCoreBIOS = "boot/grub/i386-pc/core.img"
	grubBootBIOS = "boot/grub/i386-pc/boot.img"
)

// grubImagesScript copies GRUB's modules into /boot/grub and makes the
// core images with the image's own grub-mkimage.
func grubImagesScript() string {
	return fmt.Sprintf(`set -eu
for p in x86_64-efi i386-pc; do
	[ -d /usr/lib/grub/$p ] || { echo "/usr/lib/grub/$p is missing: grub-efi-amd64-bin and grub-pc-bin must be installed" >&2; exit 1; }
	mkdir -p /boot/grub/$p
	cp /usr/lib/grub/$p/*.mod /usr/lib/grub/$p/*.lst /boot/grub/$p/
done
cp /usr/lib/grub/i386-pc/boot.img /%s
grub-mkimage -O x86_64-efi -d /usr/lib/grub/x86_64-efi -c /boot/grub/x86_64-efi/load.cfg -p /boot/grub -o /%s %s
grub-mkimage -O i386-pc -d /usr/lib/grub/i386-pc -c /boot/grub/i386-pc/load.cfg -p /boot/grub -o /%s %s
`, grubBootBIOS, grubCoreEFI, strings.Join(grubEFIModules, " "), grubCoreBIOS, strings.Join(grubBIOSModules, " "))
}

// runChroot runs a shell script in rootfs with chroot, nothing mounted:
// what it runs (GRUB's tools, the image's shell on its own files) needs no
// /proc or /dev.
func runChroot(ctx context.Context, rootfs, script string) (string, error) {
	cmd := exec.CommandContext(ctx, "chroot", rootfs, "/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// stepGrubDefaults writes /etc/default/grub with kernel_cmdline when the
// image has none. It runs before the provisioners, so that they find the
// file they add to and the manifest they write records it: drift on the
// booted host then compares it with what was baked.
type stepGrubDefaults struct{}

func (s *stepGrubDefaults) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	root, err := os.OpenRoot(state.Get(stateRootfs).(string))
	if err != nil {
		return halt(state, err)
	}
	defer root.Close()
	if _, err := root.Lstat("etc/default/grub"); !errors.Is(err, os.ErrNotExist) {
		return multistep.ActionContinue
	}
	dist := map[string]string{"debian": "Debian", "ubuntu": "Ubuntu"}[c.Distribution]
	if err := writeRootFile(root, "etc/default/grub", fmt.Sprintf(defaultGrubFile, dist, c.KernelCmdline), 0o644); err != nil {
		return halt(state, err)
	}
	return multistep.ActionContinue
}

func (s *stepGrubDefaults) Cleanup(multistep.StateBag) {}

// stepBootConfig writes what the image boots with into the rootfs: fstab
// by UUID, grub.cfg from the image's GRUB defaults, and GRUB's modules and
// core images.
type stepBootConfig struct{}

func (s *stepBootConfig) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	rootfs := state.Get(stateRootfs).(string)
	size, err := parseSize(c.ImageSize)
	if err != nil {
		return halt(state, fmt.Errorf("image_size: %w", err))
	}
	var luks *luksRoot
	if r, ok := state.GetOk(stateLUKS); ok {
		luks = r.(*luksRoot)
	}
	l, err := newDiskLayout(size, luks)
	if err != nil {
		return halt(state, err)
	}
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return halt(state, err)
	}
	defer root.Close()
	kernels, err := imageKernels(root)
	if err != nil {
		return halt(state, fmt.Errorf("finding the image's kernel: %w", err))
	}
	if len(kernels) == 0 {
		return halt(state, fmt.Errorf("finding the image's kernel: /boot of the rootfs has no vmlinuz-RELEASE with its initrd.img-RELEASE; kernel_package %q installed none", c.KernelPackage))
	}
	if len(kernels) > 1 {
		ui.Message(fmt.Sprintf("The image has %d kernels; GRUB boots the newest, %s, by default", len(kernels), kernels[0].Release))
	}
	if err := writeFstab(root, l); err != nil {
		return halt(state, err)
	}
	out, err := runChroot(ctx, rootfs, grubDefaultsScript)
	if err != nil {
		return halt(state, fmt.Errorf("reading the image's GRUB defaults: %w", err))
	}
	d, err := parseGrubDefaults(out)
	if err != nil {
		return halt(state, err)
	}
	ui.Say(fmt.Sprintf("Booting Linux %s with: root=UUID=%s ro %s %s", kernels[0].Release, l.RootFSUUID, d.Cmdline, d.CmdlineDef))
	if luks != nil {
		if err := installLUKSEnroll(root, luks, c.Encryption.TPM2PCRs); err != nil {
			return halt(state, err)
		}
	}
	files := map[string]string{
		"boot/grub/grub.cfg":            grubConfig(d, l, kernels),
		"boot/grub/x86_64-efi/load.cfg": grubLoadConfig(l),
		"boot/grub/i386-pc/load.cfg":    grubLoadConfig(l),
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := writeRootFile(root, name, files[name], 0o644); err != nil {
			return halt(state, err)
		}
	}
	if err := root.MkdirAll("boot/efi", 0o755); err != nil {
		return halt(state, fmt.Errorf("creating /boot/efi: %w", err))
	}
	if _, err := runChroot(ctx, rootfs, grubImagesScript()); err != nil {
		return halt(state, fmt.Errorf("making GRUB's images with the image's grub-mkimage: %w", err))
	}
	state.Put(stateDisk, l)
	return multistep.ActionContinue
}

func (s *stepBootConfig) Cleanup(multistep.StateBag) {}

// writeRootFile writes name under root, making its directory.
func writeRootFile(root *os.Root, name, body string, mode os.FileMode) error {
	if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return fmt.Errorf("writing /%s: %w", name, err)
	}
	if err := root.WriteFile(name, []byte(body), mode); err != nil {
		return fmt.Errorf("writing /%s: %w", name, err)
	}
	if err := root.Chmod(name, mode); err != nil {
		return fmt.Errorf("writing /%s: %w", name, err)
	}
	return nil
}

// writeFstab adds the root and the ESP, by UUID, to the image's fstab. An
// entry of the image's own for either is refused: which one a boot would
// use is not for the builder to guess.
func writeFstab(root *os.Root, l *diskLayout) error {
	old, err := root.ReadFile("etc/fstab")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading /etc/fstab: %w", err)
	}
	for _, line := range strings.Split(string(old), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && !strings.HasPrefix(f[0], "#") && (f[1] == "/" || f[1] == "/boot/efi" || (l.LUKS != nil && f[1] == "/boot")) {
			return fmt.Errorf("/etc/fstab of the rootfs already mounts %s (%q); a disk output writes its own entry by UUID", f[1], strings.TrimSpace(line))
		}
	}
	body := string(old)
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	body += "# Written by the gpuhost-rootfs builder: the disk's root and EFI system partition.\n"
	body += fmt.Sprintf("UUID=%s / ext4 errors=remount-ro 0 1\n", l.RootFSUUID)
	if l.LUKS != nil {
		// / is the ext4 inside the LUKS2 volume, which /etc/crypttab opens as
		// /dev/mapper/luks-UUID; by its UUID it is found once opened.
		body = strings.Replace(body, fmt.Sprintf("UUID=%s / ", l.RootFSUUID), fmt.Sprintf("/dev/mapper/%s / ", l.LUKS.Name()), 1)
		// nofail: / is already up (the initramfs mounted it), and nothing
		// but a kernel update needs /boot; a boot whose udev is slow (a
		// starved VM: device jobs time out after 90 s by default) must not
		// end in emergency mode for it, nor the ESP below it.
		body += fmt.Sprintf("UUID=%s /boot ext4 defaults,nofail,x-systemd.device-timeout=10min 0 2\n", l.BootFSUUID)
	}
	body += fmt.Sprintf("UUID=%s /boot/efi vfat umask=0077,nofail 0 2\n", l.espFstabID())
	return writeRootFile(root, "etc/fstab", body, 0o644)
}

// stepDisk writes the partition table and the two file systems into the
// disk's raw file.
type stepDisk struct {
	made []string
	// aside is the rootfs's /boot while it is moved aside, and where it
	// goes back.
	aside [2]string
}

// diskRaw is where a disk's raw file is written: the output itself for
// disk_format raw, a temporary file beside the rootfs otherwise.
func diskRaw(c *Config) string {
	if c.DiskFormat == "raw" {
		return filepath.Join(c.OutputDir, "disk.raw")
	}
	return filepath.Join(c.WorkDir, "disk.raw.tmp")
}

func (s *stepDisk) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	rootfs := state.Get(stateRootfs).(string)
	l := state.Get(stateDisk).(*diskLayout)
	raw := diskRaw(c)
	ui.Say(fmt.Sprintf("Writing a bootable disk %s (GPT: BIOS boot, EFI system partition %s, root %s)", raw, l.espFstabID(), l.RootFSUUID))
	if l.LUKS != nil {
		s.made = append(s.made, filepath.Join(c.WorkDir, "luks-header.tmp"), filepath.Join(c.WorkDir, "root.ext4.tmp"),
			filepath.Join(c.WorkDir, "luks-volume.key.tmp"), filepath.Join(c.WorkDir, "luks-provision.key.tmp"))
	}
	run := func(stdin string, name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")
		if stdin != "" {
			cmd.Stdin = strings.NewReader(stdin)
		}
		if err := runStreaming(cmd, ui); err != nil {
			return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
		}
		return nil
	}
	s.made = append(s.made, raw)
	if err := createSparse(raw, l.Sectors*sectorSize); err != nil {
		return halt(state, err)
	}
	if err := run(l.sfdiskScript(), "sfdisk", "--quiet", "--no-reread", "--no-tell-kernel", raw); err != nil {
		return halt(state, err)
	}

	esp := filepath.Join(c.WorkDir, "esp.vfat.tmp")
	s.made = append(s.made, esp)
	_ = os.Remove(esp)
	efi := filepath.Join(rootfs, grubCoreEFI)
	steps := [][]string{
		{"mkfs.vfat", "-C", "-F", "32", "-s", "1", "-n", "ESP", "-i", l.ESPVolumeID, esp, strconv.Itoa(espSectors * sectorSize / 1024)},
		{"mmd", "-i", esp, "::/EFI", "::/EFI/BOOT"},
		{"mcopy", "-i", esp, efi, "::/EFI/BOOT/BOOTX64.EFI"},
	}
	for _, st := range steps {
		if err := run("", st[0], st[1:]...); err != nil {
			return halt(state, fmt.Errorf("making the EFI system partition: %w", err))
		}
	}
	if err := copyInto(raw, esp, espStart*sectorSize, espSectors*sectorSize); err != nil {
		return halt(state, fmt.Errorf("writing the EFI system partition: %w", err))
	}
	_ = os.Remove(esp)

	if l.LUKS == nil {
		if err := run("", "mkfs.ext4", "-q", "-F", "-L", "root", "-U", l.RootFSUUID,
			"-E", fmt.Sprintf("offset=%d", rootStart*sectorSize), "-d", rootfs, raw,
			fmt.Sprintf("%dk", l.RootSectors*sectorSize/1024)); err != nil {
			return halt(state, fmt.Errorf("writing the root file system: %w", err))
		}
		return multistep.ActionContinue
	}
	if err := run("", "mkfs.ext4", "-q", "-F", "-L", "boot", "-U", l.BootFSUUID,
		"-E", fmt.Sprintf("offset=%d", bootStart*sectorSize), "-d", filepath.Join(rootfs, "boot"), raw,
		fmt.Sprintf("%dk", l.BootSectors*sectorSize/1024)); err != nil {
		return halt(state, fmt.Errorf("writing the /boot file system: %w", err))
	}
	ui.Say(fmt.Sprintf("Encrypting the root partition: LUKS2 %s, %s with a %d-bit key, argon2id", l.LUKS.UUID, luksCipher, luksKeyBits))
	err := s.withoutBoot(c, rootfs, func() error {
		return writeLUKSRoot(ctx, l.LUKS, c.WorkDir, raw, rootfs, l.RootFSUUID, l.RootStart*sectorSize, l.RootSectors*sectorSize, ui)
	})
	if err != nil {
		return halt(state, fmt.Errorf("writing the encrypted root: %w", err))
	}
	return multistep.ActionContinue
}

// withoutBoot runs fn with the rootfs's /boot moved aside and an empty
// directory in its place, the mount point of the /boot partition: the
// root file system must not carry a second copy of the kernel, the
// initramfs and the provisioning key under it. /boot is put back after,
// and by Cleanup should the build stop in between.
func (s *stepDisk) withoutBoot(c *Config, rootfs string, fn func() error) error {
	boot, aside := filepath.Join(rootfs, "boot"), filepath.Join(c.WorkDir, "boot.aside.tmp")
	fi, err := os.Lstat(boot)
	if err != nil {
		return err
	}
	if err := os.Rename(boot, aside); err != nil {
		return err
	}
	s.aside = [2]string{aside, boot}
	err = os.Mkdir(boot, fi.Mode().Perm())
	if err == nil {
		err = fn()
	}
	if rerr := s.restoreBoot(); err == nil {
		err = rerr
	}
	return err
}

// restoreBoot puts a /boot moved aside back.
func (s *stepDisk) restoreBoot() error {
	aside, boot := s.aside[0], s.aside[1]
	if aside == "" {
		return nil
	}
	if err := os.Remove(boot); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("putting back %s: %w", boot, err)
	}
	if err := os.Rename(aside, boot); err != nil {
		return fmt.Errorf("putting back %s: %w", boot, err)
	}
	s.aside = [2]string{}
	return nil
}

// Cleanup removes a half-written disk when the build did not finish.
func (s *stepDisk) Cleanup(state multistep.StateBag) {
	if err := s.restoreBoot(); err != nil {
		state.Get(stateUI).(packersdk.Ui).Error(err.Error())
	}
	if !stopped(state) {
		return
	}
	for _, f := range s.made {
		_ = os.Remove(f)
	}
}

// stopped says whether the build was cancelled or halted.
func stopped(state multistep.StateBag) bool {
	_, cancelled := state.GetOk(multistep.StateCancelled)
	_, halted := state.GetOk(multistep.StateHalted)
	return cancelled || halted
}

// createSparse creates name as a file of size bytes with no data written.
func createSparse(name string, size int64) error {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// copyInto copies the file src into dst at offset; src must fit in limit
// bytes.
func copyInto(dst, src string, offset, limit int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil {
		return err
	} else if fi.Size() > limit {
		return fmt.Errorf("%s is %d bytes, more than the %d of its partition", src, fi.Size(), limit)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.NewOffsetWriter(out, offset), in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// stepBootloader makes the disk boot on BIOS firmware: GRUB's boot sector
// in the protective MBR, its core image in the BIOS boot partition. UEFI
// firmware needs nothing more than the ESP's \EFI\BOOT\BOOTX64.EFI, the
// path it loads from a disk with no boot entries of its own.
type stepBootloader struct{}

func (s *stepBootloader) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	rootfs := state.Get(stateRootfs).(string)
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return halt(state, err)
	}
	defer root.Close()
	boot, err := root.ReadFile(grubBootBIOS)
	if err != nil {
		return halt(state, fmt.Errorf("reading GRUB's boot sector: %w", err))
	}
	core, err := root.ReadFile(grubCoreBIOS)
	if err != nil {
		return halt(state, fmt.Errorf("reading GRUB's core image: %w", err))
	}
	f, err := os.OpenFile(diskRaw(c), os.O_RDWR, 0)
	if err != nil {
		return halt(state, err)
	}
	err = installBIOSBoot(f, boot, core, biosStart, biosSectors)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return halt(state, fmt.Errorf("installing GRUB for BIOS: %w", err))
	}
	return multistep.ActionContinue
}

func (s *stepBootloader) Cleanup(multistep.StateBag) {}

// readWriterAt is a disk being written.
type readWriterAt interface {
	io.ReaderAt
	io.WriterAt
}

// Offsets in GRUB's i386-pc boot.img and diskboot.img (include/grub/i386/pc/boot.h).
const (
	bootBPBStart    = 0x03  // the BIOS parameter block a FAT boot sector carries
	bootBPBEnd      = 0x5a  //
	bootKernelLBA   = 0x5c  // 8 bytes: the sector core.img starts at
	bootDrive       = 0x64  // 1 byte: 0xff takes the drive the BIOS booted from
	bootDriveCheck  = 0x66  // a 2-byte jump that trusts a floppy's drive number
	bootPartTable   = 0x1b8 // the disk signature and partition table, kept
	bootListSize    = 12    // one blocklist entry: start (8), length (2), segment (2)
	coreLoadSegment = 0x820 // where diskboot.img loads the rest of core.img
)

// installBIOSBoot does what grub-bios-setup does for a GPT disk with a BIOS
// boot partition: core.img is written contiguously at the partition's start,
// its first sector (diskboot.img) is given the blocklist of the rest, and
// boot.img goes into the first sector with the sector core.img starts at.
// The first sector's partition table (here the GPT's protective MBR) and
// BPB are kept, and the floppy drive check is turned into no-ops as for any
// hard disk.
func installBIOSBoot(disk readWriterAt, bootImg, coreImg []byte, start, sectors int64) error {
	if len(bootImg) != sectorSize {
		return fmt.Errorf("boot.img is %d bytes, want %d", len(bootImg), sectorSize)
	}
	n := (int64(len(coreImg)) + sectorSize - 1) / sectorSize
	if n < 2 {
		return fmt.Errorf("core.img is %d bytes, too small to be GRUB's", len(coreImg))
	}
	if n > sectors {
		return fmt.Errorf("core.img needs %d sectors, more than the BIOS boot partition's %d", n, sectors)
	}
	mbr := make([]byte, sectorSize)
	if _, err := disk.ReadAt(mbr, 0); err != nil {
		return fmt.Errorf("reading the first sector: %w", err)
	}
	if mbr[0x1fe] != 0x55 || mbr[0x1ff] != 0xaa || mbr[0x1c2] != 0xee {
		return errors.New("the first sector is no GPT protective MBR; write the partition table first")
	}
	boot := slices.Clone(bootImg)
	copy(boot[bootBPBStart:bootBPBEnd], mbr[bootBPBStart:bootBPBEnd])
	binary.LittleEndian.PutUint64(boot[bootKernelLBA:], uint64(start))
	boot[bootDrive] = 0xff
	boot[bootDriveCheck], boot[bootDriveCheck+1] = 0x90, 0x90
	copy(boot[bootPartTable:], mbr[bootPartTable:])

	core := make([]byte, n*sectorSize)
	copy(core, coreImg)
	list := sectorSize - bootListSize
	binary.LittleEndian.PutUint64(core[list:], uint64(start+1))
	binary.LittleEndian.PutUint16(core[list+8:], uint16(n-1))
	binary.LittleEndian.PutUint16(core[list+10:], coreLoadSegment)
	// The entry below is the list's terminator.
	clear(core[list-bootListSize : list])

	if _, err := disk.WriteAt(core, start*sectorSize); err != nil {
		return fmt.Errorf("writing core.img: %w", err)
	}
	if _, err := disk.WriteAt(boot, 0); err != nil {
		return fmt.Errorf("writing the boot sector: %w", err)
	}
	return nil
}

// stepDiskOutput converts the raw disk to qcow2 when asked, and names the
// artifact.
type stepDiskOutput struct{}

func (s *stepDiskOutput) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	rootfs := state.Get(stateRootfs).(string)
	raw := diskRaw(c)
	out := raw
	if c.DiskFormat == "qcow2" {
		out = filepath.Join(c.OutputDir, "disk.qcow2")
		ui.Say("Writing a qcow2 disk " + out)
		cmd := exec.CommandContext(ctx, "qemu-img", "convert", "-c", "-m", "16", "-W", "-O", "qcow2", raw, out)
		err := runStreaming(cmd, ui)
		os.Remove(raw)
		if err != nil {
			os.Remove(out)
			return halt(state, fmt.Errorf("qemu-img convert %s: %w", raw, err))
		}
	}
	if c.RemoveRootfs {
		if err := removeTree(rootfs); err != nil {
			return halt(state, err)
		}
		state.Remove(stateRootfs)
	}
	state.Put(stateFiles, []string{out})
	return multistep.ActionContinue
}

func (s *stepDiskOutput) Cleanup(multistep.StateBag) {}
