package gpu

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// Where the kernel lists RDMA devices and loaded modules.
const (
	ibClass    = "/sys/class/infiniband"
	sysModules = "/sys/module"
	// maxIBPorts bounds the devices and ports read; a GPU node has one or
	// two HCAs per GPU.
	maxIBPorts = 256
)

// peerMemModules are the modules that give an HCA GPUDirect RDMA access to
// GPU memory: the driver's own, and Mellanox's older one.
var peerMemModules = []string{"nvidia_peermem", "nv_peer_mem"}

// CollectInfiniBand reads a live host's RDMA ports. A host without
// /sys/class/infiniband, or with no device there, has none: not
// applicable.
func CollectInfiniBand(ctx context.Context, env *collect.Env) (*facts.InfiniBand, error) {
	if !env.Live {
		return nil, collect.NotApplicable("an image has no InfiniBand ports; they are those of the host it boots on")
	}
	devs, err := env.FS.ReadDir(ibClass)
	switch {
	case sysroot.IsNotExist(err):
		return nil, collect.NotApplicable(fmt.Sprintf("no RDMA devices (%s does not exist)", env.FS.Display(ibClass)))
	case err != nil:
		return nil, fmt.Errorf("listing RDMA devices: %w", err)
	case len(devs) == 0:
		return nil, collect.NotApplicable(fmt.Sprintf("no RDMA devices in %s", env.FS.Display(ibClass)))
	}
	ib := &facts.InfiniBand{Ports: []facts.IBPort{}}
	for _, d := range devs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(ib.Ports) >= maxIBPorts {
			return nil, fmt.Errorf("more than %d RDMA ports under %s", maxIBPorts, env.FS.Display(ibClass))
		}
		dir := path.Join(ibClass, d.Name())
		ports, err := env.FS.ReadDir(path.Join(dir, "ports"))
		if err != nil {
			ib.Ports = append(ib.Ports, facts.IBPort{Device: d.Name(), Error: fmt.Sprintf("listing its ports: %v", err)})
			continue
		}
		for _, p := range ports {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if len(ib.Ports) >= maxIBPorts {
				return nil, fmt.Errorf("more than %d RDMA ports under %s", maxIBPorts, env.FS.Display(ibClass))
			}
			n, err := strconv.Atoi(p.Name())
			if err != nil || n < 0 {
				continue
			}
			ib.Ports = append(ib.Ports, readIBPort(env.FS, d.Name(), n, path.Join(dir, "ports", p.Name())))
		}
	}
	slices.SortFunc(ib.Ports, func(a, b facts.IBPort) int {
		if c := strings.Compare(a.Device, b.Device); c != 0 {
			return c
		}
		return a.Port - b.Port
	})
	for _, m := range peerMemModules {
		if _, err := env.FS.Stat(path.Join(sysModules, m)); err == nil {
			ib.PeerMem = true
		}
	}
	return ib, nil
}

// readIBPort reads one port's attributes (Documentation/ABI/stable/
// sysfs-class-infiniband): state and phys_state as "4: ACTIVE", rate as
// "400 Gb/sec (4X NDR)", link_layer, and the link_downed counter.
func readIBPort(fsys sysroot.FS, device string, port int, dir string) facts.IBPort {
	p := facts.IBPort{Device: device, Port: port}
	attr := func(name string) (string, error) {
		b, err := fsys.ReadFileLimit(path.Join(dir, name), sysfsAttrMax)
		return strings.TrimSpace(string(b)), err
	}
	var errs []string
	state := func(name string) string {
		v, err := attr(name)
		if err != nil {
			errs = append(errs, err.Error())
			return ""
		}
		_, word, ok := strings.Cut(v, ": ")
		if !ok || word == "" {
			errs = append(errs, fmt.Sprintf("%s is %q, not \"N: STATE\"", fsys.Display(path.Join(dir, name)), v))
			return ""
		}
		return word
	}
	p.State, p.PhysState = state("state"), state("phys_state")
	if v, err := attr("rate"); err != nil {
		errs = append(errs, err.Error())
	} else if f := strings.Fields(v); len(f) < 2 || f[1] != "Gb/sec" {
		errs = append(errs, fmt.Sprintf("%s is %q, not \"N Gb/sec\"", fsys.Display(path.Join(dir, "rate")), v))
	} else if r, err := strconv.ParseFloat(f[0], 64); err != nil || r < 0 {
		errs = append(errs, fmt.Sprintf("%s is %q, not \"N Gb/sec\"", fsys.Display(path.Join(dir, "rate")), v))
	} else {
		p.RateGbps = r
	}
	if v, err := attr("link_layer"); err == nil {
		p.LinkLayer = v
	}
	if v, err := attr("counters/link_downed"); err == nil {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			p.LinkDowned = &n
		} else {
			errs = append(errs, fmt.Sprintf("%s is %q, not a count", fsys.Display(path.Join(dir, "counters/link_downed")), v))
		}
	}
	p.Error = strings.Join(errs, "; ")
	return p
}
