package osinfo

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// cgroup2Magic is CGROUP2_SUPER_MAGIC, what statfs reports for a cgroup2
// mount.
const cgroup2Magic = 0x63677270

// systemdUnifiedDefault is the first systemd release that distributions
// ship with the unified hierarchy as default (Debian 11 has 247, Ubuntu 21.10
// has 248; Ubuntu 20.04's 245 still boots hybrid).
const systemdUnifiedDefault = 247

// CollectCgroup says which cgroup hierarchy the target runs, or an image
// boots (its kernel's command line or its systemd package chooses: k,
// nil when the kernel's facts could not be read, and the installed
// packages), and the memory limits of its slices.
func CollectCgroup(_ context.Context, env *collect.Env, k *facts.Kernel, installed []facts.Package) (*facts.Cgroup, error) {
	var c *facts.Cgroup
	var err error
	if env.Live {
		c, err = liveCgroup(env.FS)
	} else {
		c, err = offlineCgroup(env.FS, k, installed)
	}
	if err != nil {
		return nil, err
	}
	// A live host's limits are read from its cgroup2 tree; an image's come
	// from the slices' unit files, whichever hierarchy it boots.
	if c.Version == 2 || !env.Live {
		if c.Memory, err = cgroupMemory(env.FS, env.Live); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func liveCgroup(fsys sysroot.FS) (*facts.Cgroup, error) {
	if fsys.Root() == "/" {
		magic, err := statfsMagic("/sys/fs/cgroup")
		if err == nil {
			if magic == cgroup2Magic {
				return &facts.Cgroup{Version: 2, Source: "statfs /sys/fs/cgroup"}, nil
			}
			if _, err := fsys.Stat("/sys/fs/cgroup/unified/cgroup.controllers"); err == nil {
				return &facts.Cgroup{Version: 1, Source: "statfs /sys/fs/cgroup (hybrid: cgroup2 at /sys/fs/cgroup/unified)"}, nil
			}
			return &facts.Cgroup{Version: 1, Source: "statfs /sys/fs/cgroup"}, nil
		}
		// Fall through to the file test, which works inside restricted
		// sandboxes where statfs is refused.
	}
	if _, err := fsys.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return &facts.Cgroup{Version: 2, Source: "/sys/fs/cgroup/cgroup.controllers"}, nil
	}
	if _, err := fsys.Stat("/sys/fs/cgroup/unified/cgroup.controllers"); err == nil {
		return &facts.Cgroup{Version: 1, Source: "/sys/fs/cgroup/unified/cgroup.controllers (hybrid)"}, nil
	}
	if _, err := fsys.Stat("/sys/fs/cgroup"); err != nil {
		return nil, collect.Unavailable("/sys/fs/cgroup is not readable")
	}
	return &facts.Cgroup{Version: 1, Source: "/sys/fs/cgroup has no cgroup.controllers"}, nil
}

// offlineCgroup predicts the hierarchy an image boots into: an explicit
// kernel parameter wins, else the default of the installed systemd.
func offlineCgroup(fsys sysroot.FS, k *facts.Kernel, installed []facts.Package) (*facts.Cgroup, error) {
	var cmdline []string
	source := ""
	if k != nil {
		cmdline, source = k.Cmdline, k.CmdlineSource
	} else {
		// The kernel collector failed, perhaps on the module trees; the
		// command line may still read.
		c, s, _, err := configuredCmdline(fsys)
		if err == nil {
			cmdline, source = c, s
		}
	}
	if source == "" {
		source = "kernel command line"
	}
	if v, ok := cmdlineParam(cmdline, "systemd.unified_cgroup_hierarchy"); ok {
		switch strings.ToLower(v) {
		case "", "1", "true", "yes", "y", "on":
			return &facts.Cgroup{Version: 2, Source: source + ": systemd.unified_cgroup_hierarchy=" + v}, nil
		case "0", "false", "no", "n", "off":
			return &facts.Cgroup{Version: 1, Source: source + ": systemd.unified_cgroup_hierarchy=" + v}, nil
		}
	}
	if v, ok := cmdlineParam(cmdline, "cgroup_no_v1"); ok && v == "all" {
		return &facts.Cgroup{Version: 2, Source: source + ": cgroup_no_v1=all"}, nil
	}
	p, ok := packages.Installed(installed, "systemd")
	if !ok {
		return nil, collect.Unavailable("the kernel command line does not choose a cgroup hierarchy and no systemd package is installed")
	}
	major := majorVersion(p.Version)
	if major == 0 {
		return nil, collect.Unavailable(fmt.Sprintf("cannot read systemd's major version from %q", p.Version))
	}
	if major >= systemdUnifiedDefault {
		return &facts.Cgroup{Version: 2, Source: fmt.Sprintf("systemd %d default (unified)", major)}, nil
	}
	return &facts.Cgroup{Version: 1, Source: fmt.Sprintf("systemd %d default (hybrid)", major)}, nil
}

// majorVersion returns the leading number of a Debian version's upstream
// part ("1:252.22-1~deb12u1" -> 252), or 0.
func majorVersion(v string) int {
	if _, rest, ok := strings.Cut(v, ":"); ok {
		v = rest
	}
	end := 0
	for end < len(v) && end < 9 && v[end] >= '0' && v[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(v[:end])
	if err != nil {
		return 0
	}
	return n
}
