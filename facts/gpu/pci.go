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
	if d.GPU {
		if aer, err := readAER(fsys, dir); err != nil {
			d.AERError = err.Error()
		} else {
			d.AER = aer
		}
	}
	if rl, isLink := fsys.(interface{ Readlink(string) (string, error) }); isLink {
		if target, err := rl.Readlink(path.Join(dir, "driver")); err == nil {
			d.Driver = path.Base(target)
		}
	}
	return d, true, nil
}

// aerFiles are a function's AER counters (Documentation/ABI/testing/
// sysfs-bus-pci-devices-aer), each ending in a total line of its name.
var aerFiles = []struct{ file, total string }{
	{"aer_dev_correctable", "TOTAL_ERR_COR"},
	{"aer_dev_nonfatal", "TOTAL_ERR_NONFATAL"},
	{"aer_dev_fatal", "TOTAL_ERR_FATAL"},
}

// readAER reads a function's AER totals; nil when it has none of the
// files. The kernel counts an error where it is reported, which may be
// the link partner (the upstream port) rather than the GPU.
func readAER(fsys sysroot.FS, dir string) (*facts.AER, error) {
	var totals [3]int64
	found := 0
	for i, f := range aerFiles {
		name := path.Join(dir, f.file)
		b, err := fsys.ReadFileLimit(name, sysfsAttrMax)
		if sysroot.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", fsys.Display(name), err)
		}
		n, ok := aerTotal(string(b), f.total)
		if !ok {
			return nil, fmt.Errorf("%s has no %s line with a count", fsys.Display(name), f.total)
		}
		totals[i] = n
		found++
	}
	switch found {
	case 0:
		return nil, nil
	case len(aerFiles):
		return &facts.AER{Correctable: totals[0], NonFatal: totals[1], Fatal: totals[2]}, nil
	}
	return nil, fmt.Errorf("%s has %d of the 3 AER counter files", fsys.Display(dir), found)
}

// aerTotal finds the line "<total> <count>".
func aerTotal(text, total string) (int64, bool) {
	for line := range strings.Lines(text) {
		name, count, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || name != total {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(count), 10, 64)
		return n, err == nil && n >= 0
	}
	return 0, false
}
