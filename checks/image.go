package checks

import (
	"context"
	"fmt"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/facts"
)

// Image collects facts from a raw or qcow2 disk image, reading its ext4 root
// filesystem without mounting it. An image that cannot be opened, or that
// turns out cut short or corrupt while it is read, is an error: facts from
// part of a disk could hide what the rest holds.
func Image(ctx context.Context, file string, o Options) (*facts.Facts, error) {
	img, err := o.Image.Open(ctx, file)
	if err != nil {
		return nil, err
	}
	defer img.Close()
	parts, err := img.Partitions()
	if err != nil {
		return nil, err
	}
	devices := make([]collector.BlockDevice, 0, len(parts))
	for _, p := range parts {
		devices = append(devices, collector.BlockDevice{Name: fmt.Sprintf("partition %d", p.Index), PartUUID: p.UUID, PartLabel: p.Label, Size: p.Size, R: p.R})
	}
	f := Collect(ctx, &collector.Env{FS: img.FS(), Devices: devices}, facts.KindImage, file, o)
	if err := img.Err(); err != nil {
		return nil, err
	}
	return f, nil
}
