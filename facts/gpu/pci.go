package gpu

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// pciDevices is where the kernel lists every PCI function.
const pciDevices = "/sys/bus/pci/devices"

// nvidiaVendor is NVIDIA's PCI vendor id as sysfs prints it.
const nvidiaVendor = "0x10de"

// Bounds on the sysfs walk. A sysfs attribute reports a size of one page
// whatever it holds, so that is the read limit; a host has far fewer PCI
// functions than maxPCIFunctions.
const (
	sysfsAttrMax    = 4096
	maxPCIFunctions = 4096
)

// CollectPCI lists the NVIDIA functions on a live host's PCI bus. A
// missing /sys/bus/pci is unavailable (a container without the host's
// sysfs), never "no GPUs". It reads the target alone.
func CollectPCI(ctx context.Context, env *collect.Env) (*facts.PCI, error) {
	if !env.Live {
		return nil, collect.NotApplicable("an image has no PCI bus; the GPUs are those of the host it boots on")
	}
	entries, err := env.FS.ReadDir(pciDevices)
	switch {
	case sysroot.IsNotExist(err):
		return nil, collect.Unavailable(fmt.Sprintf("%s does not exist (is the host's /sys mounted?)", env.FS.Display(pciDevices)))
	case err != nil:
		return nil, fmt.Errorf("listing PCI functions: %w", err)
	}
	if len(entries) > maxPCIFunctions {
		return nil, fmt.Errorf("listing PCI functions: %s has %d entries, over the limit of %d", env.FS.Display(pciDevices), len(entries), maxPCIFunctions)
	}
	out := &facts.PCI{Devices: []facts.PCIDevice{}}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("listing PCI functions: %w", err)
		}
		d, ok, err := readPCIFunction(env.FS, path.Join(pciDevices, e.Name()))
		if err != nil {
			return nil, err
		}
		if ok {
			d.Address = e.Name()
			out.Devices = append(out.Devices, d)
		}
	}
	return out, nil
}

// readPCIFunction reads one function's ids; ok is false when it is not
// NVIDIA's. A function that vanished while being read (hot unplug) is
// skipped, since it is no longer on the bus.
func readPCIFunction(fsys sysroot.FS, dir string) (d facts.PCIDevice, ok bool, err error) {
	attr := func(name string) (string, error) {
		b, err := fsys.ReadFileLimit(path.Join(dir, name), sysfsAttrMax)
		if err != nil {
			return "", err
		}
		return strings.ToLower(strings.TrimSpace(string(b))), nil
	}
	vendor, err := attr("vendor")
	switch {
	case sysroot.IsNotExist(err):
		return d, false, nil
	case err != nil:
		return d, false, fmt.Errorf("reading PCI function %s: %w", path.Base(dir), err)
	}
	if vendor != nvidiaVendor {
		return d, false, nil
	}
	d.Vendor = vendor
	if d.Device, err = attr("device"); err != nil {
		return d, false, fmt.Errorf("reading PCI function %s: %w", path.Base(dir), err)
	}
	if d.Class, err = attr("class"); err != nil {
		return d, false, fmt.Errorf("reading PCI function %s: %w", path.Base(dir), err)
	}
	d.GPU = strings.HasPrefix(d.Class, "0x03")
	if n, err := attr("numa_node"); err == nil {
		if v, err := strconv.Atoi(n); err == nil && v >= 0 {
			d.NUMANode = &v
		}
	}
	if rl, isLink := fsys.(interface{ Readlink(string) (string, error) }); isLink {
		if target, err := rl.Readlink(path.Join(dir, "driver")); err == nil {
			d.Driver = path.Base(target)
		}
	}
	return d, true, nil
}
