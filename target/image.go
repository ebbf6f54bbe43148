package target

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/target/diskimage"
)

// Image collects facts from a raw or qcow2 disk image, reading its ext4 root
// filesystem without mounting it. An image that cannot be opened, or that
// turns out cut short or corrupt while it is read, is an error: facts from
// part of a disk could hide what the rest holds.
//
// A root inside a LUKS volume cannot be read without its key; with
// o.ImageRootfs the files come from the tree it was made from, which must
// name the disk's LUKS volume in its /etc/crypttab, and the encryption
// facts from the disk's partitions and LUKS header.
func Image(ctx context.Context, file string, o Options) (*facts.Facts, error) {
	img, fsys, closer, err := openImage(ctx, file, o)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	parts, err := img.Partitions()
	if err != nil {
		return nil, err
	}
	devices := make([]collect.BlockDevice, 0, len(parts))
	for _, p := range parts {
		devices = append(devices, collect.BlockDevice{Name: fmt.Sprintf("partition %d", p.Index), PartUUID: p.UUID, PartLabel: p.Label, PartType: p.Type, Size: p.Size, R: p.R})
	}
	f := Collect(ctx, &collect.Env{FS: fsys, Devices: devices}, facts.KindImage, file, o)
	if err := img.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// ImageFiles opens a disk image's root file system as Image reads it: the
// disk's own, or, for a root inside LUKS, the tree o.ImageRootfs names,
// checked to be that disk's. done closes what was opened and returns the
// error the disk hit while it was read, which the caller must heed: files
// from part of a disk understate what it holds.
func ImageFiles(ctx context.Context, file string, o Options) (fsys sysroot.FS, done func() error, err error) {
	img, fsys, closer, err := openImage(ctx, file, o)
	if err != nil {
		return nil, nil, err
	}
	return fsys, func() error {
		err := img.Err()
		closer.Close()
		if err != nil {
			return fmt.Errorf("reading %s: %w", file, err)
		}
		return nil
	}, nil
}

// openImage opens the disk image and the file system its root's files are
// read from; the closer closes both.
func openImage(ctx context.Context, file string, o Options) (*diskimage.Image, sysroot.FS, io.Closer, error) {
	opts := o.Image
	opts.EncryptedRoot = o.ImageRootfs != ""
	img, err := opts.Open(ctx, file)
	if err != nil {
		return nil, nil, nil, err
	}
	switch {
	case img.Encrypted != nil:
		tree, closer, err := imageTree(o.ImageRootfs, img.Encrypted)
		if err != nil {
			img.Close()
			return nil, nil, nil, fmt.Errorf("scanning %s: %w", file, err)
		}
		return img, tree, closers{closer, img}, nil
	case o.ImageRootfs != "":
		img.Close()
		return nil, nil, nil, fmt.Errorf("rootfs tree %s: the root filesystem of %s is not encrypted, so it is read from the disk itself; a rootfs tree is for a root inside a LUKS volume", o.ImageRootfs, file)
	}
	return img, img.FS(), img, nil
}

// closers closes each in turn and returns the first error.
type closers []io.Closer

func (cs closers) Close() error {
	var first error
	for _, c := range cs {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// imageTree opens dir, the rootfs tree of a disk whose root is inside the
// LUKS volume enc. The tree must be that disk's: its /etc/crypttab must
// open the volume by the UUID in the disk's header, or the scan would
// judge one tree's files beside another disk's encryption.
func imageTree(dir string, enc *diskimage.EncryptedRoot) (sysroot.FS, io.Closer, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("rootfs tree: %w", err)
	}
	if !info.IsDir() {
		return nil, nil, fmt.Errorf("rootfs tree %s: not a directory", dir)
	}
	fsys, closer, err := sysroot.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	data, err := fsys.ReadFileLimit("/etc/crypttab", 1<<20)
	if err != nil {
		closer.Close()
		return nil, nil, fmt.Errorf("rootfs tree %s: reading /etc/crypttab, which must open the disk's LUKS volume %s: %w", dir, enc.UUID, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && !strings.HasPrefix(f[0], "#") && strings.EqualFold(f[1], "UUID="+enc.UUID) {
			return fsys, closer, nil
		}
	}
	closer.Close()
	return nil, nil, fmt.Errorf("rootfs tree %s: its /etc/crypttab does not open the LUKS volume UUID=%s on partition %d of the disk, so it is not the tree this disk was made from", dir, enc.UUID, enc.Partition.Index)
}
