package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/target"
	"github.com/gpuhost/gpuhost/target/diskimage"
)

// scanImageCommand is `scan image FILE`: the pre-deploy gate over the disk a
// build produced, read without mounting, so CI needs no root or loop device.
func (a *app) scanImageCommand() *cobra.Command {
	var sf scanFlags
	var imf imageFlags
	cmd := &cobra.Command{
		Use:   "image FILE",
		Short: "Scan a disk image (raw or qcow2; ext4, whole disk or GPT/MBR partition) without mounting it",
		Long:  imageLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.scanCollected(cmd.Context(), &sf, func(ctx context.Context) (*facts.Facts, error) {
				f, err := target.Image(ctx, args[0], imf.options(a.collectOptions(nil)))
				return f, imageError(err)
			})
		},
	}
	sf.register(cmd)
	imf.register(cmd)
	return cmd
}

// imageLong tells what an image may and may not be; docs/limits.md has the
// limits themselves.
const imageLong = `Reads the image's ext4 root filesystem without mounting it. The image is untrusted input:
its qcow2 structure and partition table are checked first, and an image that refers to a file
outside itself (a qcow2 backing file or external data file) is refused unless --allow-backing
names the directory its chain lies in. The root filesystem is the partition a boot would mount
(see docs/limits.md); where that is not clear the scan exits 2 and --root-partition chooses.
A root inside a LUKS volume cannot be read without its key: the scan exits 2 unless --rootfs
names the tree the volume was made from (the gpuhost-rootfs builder keeps it beside the disk),
whose /etc/crypttab must open that volume; the files are then read from the tree and the
encryption from the disk's partitions and LUKS header.`

// imageFlags are the flags of the commands that open a disk image.
type imageFlags struct {
	allowBacking  string
	rootPartition int
	rootfs        string
}

func (f *imageFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.allowBacking, "allow-backing", "", "let a qcow2 image use backing files, all of which must lie in this directory (regular files, reached without symbolic links); by default a backing file is refused")
	cmd.Flags().IntVar(&f.rootPartition, "root-partition", 0, "the number of the partition holding the root filesystem, where the image holds several that could be it")
	cmd.Flags().StringVar(&f.rootfs, "rootfs", "", "the rootfs tree an image's encrypted (LUKS) root was made from: its files are read from this directory, the encryption from the disk")
}

func (f *imageFlags) options(o target.Options) target.Options {
	o.Image = diskimage.Options{AllowBacking: f.allowBacking, RootPartition: f.rootPartition}
	o.ImageRootfs = f.rootfs
	return o
}

// imageError adds to an error of opening a disk image the flag that lets
// the scan go on: the library names what is missing, and the command line
// says how its user gives it.
func imageError(err error) error {
	var enc *diskimage.EncryptedRootError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &enc):
		return fmt.Errorf("%w: give it with --rootfs DIR", err)
	case errors.Is(err, diskimage.ErrRootUnclear):
		return fmt.Errorf("%w with --root-partition N", err)
	case errors.Is(err, diskimage.ErrBackingRefused):
		return fmt.Errorf("%w (--allow-backing DIR permits a chain whose files all lie in DIR)", err)
	}
	return err
}

// factsImageCommand is `facts image FILE`.
func (a *app) factsImageCommand() *cobra.Command {
	var imf imageFlags
	cmd := &cobra.Command{
		Use:   "image FILE",
		Short: "Facts of a disk image (raw or qcow2), read without mounting it",
		Long:  imageLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := target.Image(cmd.Context(), args[0], imf.options(a.collectOptions(nil)))
			if err != nil {
				return imageError(err)
			}
			return a.printFacts(f)
		},
	}
	imf.register(cmd)
	return cmd
}
