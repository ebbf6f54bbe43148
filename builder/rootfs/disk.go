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
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
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
// file systems get, random per build unless disk_id_seed derives them (see
// diskIDs).
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
// luks unless it is nil, its identifiers drawn by d.
func newDiskLayout(size int64, luks *luksRoot, d diskIDs) (*diskLayout, error) {
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
	ids := map[string]*string{"disk GUID": &l.DiskGUID, "BIOS boot partition": &l.BIOSPartUUID,
		"EFI system partition": &l.ESPPartUUID, "root partition": &l.RootPartUUID, "root file system": &l.RootFSUUID}
	if luks != nil {
		// The /boot file system's UUID was chosen with the key: the
		// initramfs's crypttab, made before the disk, names it.
		l.BootFSUUID = luks.BootFSUUID
		ids["boot partition"] = &l.BootPartUUID
	}
	if err := d.uuids(ids); err != nil {
		return nil, err
	}
	var err error
	if l.ESPVolumeID, err = d.volumeID("EFI system partition volume id"); err != nil {
		return nil, err
	}
	return l, nil
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
	l, err := newDiskLayout(size, luks, c.diskIDs())
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
		// GRUB reads its configuration as firmware code, not as a user:
		// grub.cfg is root's alone, as CIS asks (GH-FS-003), and tells
		// nobody else the kernel's command line.
		mode := os.FileMode(0o644)
		if name == "boot/grub/grub.cfg" {
			mode = 0o600
		}
		if err := writeRootFile(root, name, files[name], mode); err != nil {
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
	// The ESP waits as long for its device: it is nofail, so the boot does
	// not wait for it, but what reads it does (the selftest and the agent
	// order after boot-efi.mount), and after a device timeout it stays
	// unmounted for the whole boot.
	body += fmt.Sprintf("UUID=%s /boot/efi vfat umask=0077,nofail,x-systemd.device-timeout=10min 0 2\n", l.espFstabID())
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
	if err := writeESP(c, l, rootfs, esp, c.WorkDir, func(name string, args ...string) error { return run("", name, args...) }); err != nil {
		return halt(state, fmt.Errorf("making the EFI system partition: %w", err))
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
