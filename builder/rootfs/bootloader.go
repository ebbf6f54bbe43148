package rootfs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

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
		cmd := exec.CommandContext(ctx, "qemu-img", qcow2ConvertArgs(c, raw, out)...)
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
