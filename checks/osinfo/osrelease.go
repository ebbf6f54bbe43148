// Package osinfo collects what the operating system says of itself: its
// release and hostname (os), the kernels installed and the command line
// the target boots or booted with (kernel), the systemd units an
// administrator enabled and masked and systemd's version (systemd), and the
// cgroup hierarchy with the memory limits of the top-level slices (cgroup).
// It also answers, on a live host, whether a unit is active (UnitState),
// for collectors of other domains.
package osinfo

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/facts"
	"github.com/gpuhost/gpuhost/checks/internal/textfile"
)

// Collectors returns the collectors of this package: os, kernel, systemd
// and cgroup.
func Collectors() []collector.Collector {
	return []collector.Collector{osCollector{}, kernelCollector{}, systemdCollector{}, cgroupCollector{}}
}

// maxHostname is the longest DNS name; anything longer in /etc/hostname is
// not a hostname.
const maxHostname = 253

type osCollector struct{}

var _ collector.Collector = osCollector{}

func (osCollector) Name() string { return "os" }

// Needs is empty: it reads the target alone.
func (osCollector) Needs() []string { return nil }

func (osCollector) Collect(_ context.Context, env *collector.Env, f *facts.Facts) error {
	const primary, fallback = "/etc/os-release", "/usr/lib/os-release"
	name := primary
	data, err := env.FS.ReadFile(primary)
	if err != nil {
		// /etc/os-release is usually a link to the fallback; when the link
		// or the file is broken, the fallback is what systemd reads too.
		var err2 error
		name = fallback
		data, err2 = env.FS.ReadFile(fallback)
		if err2 != nil {
			return fmt.Errorf("reading os-release: %s: %v; %s: %v", env.FS.Display(primary), err, env.FS.Display(fallback), err2)
		}
	}
	o, err := parseOSRelease(data)
	if err != nil {
		return fmt.Errorf("parsing %s: %w", env.FS.Display(name), err)
	}
	f.OS = o
	if h := hostname(env); h != "" {
		f.Target.Hostname = h
	}
	return nil
}

// OSReleaseVars is the one parser of os-release(5): the os collector and
// the vulnerability matching both read the distribution through it. Values
// are shell-quoted but never expanded.
func OSReleaseVars(data []byte) (map[string]string, error) {
	vars := map[string]string{}
	if _, err := textfile.ParseShell(data, vars, false); err != nil {
		return nil, err
	}
	return vars, nil
}

// parseOSRelease reads the facts of os-release(5).
func parseOSRelease(data []byte) (*facts.OS, error) {
	vars, err := OSReleaseVars(data)
	if err != nil {
		return nil, err
	}
	codename := vars["VERSION_CODENAME"]
	if codename == "" {
		codename = vars["UBUNTU_CODENAME"]
	}
	return &facts.OS{
		ID:         vars["ID"],
		VersionID:  vars["VERSION_ID"],
		Codename:   codename,
		PrettyName: vars["PRETTY_NAME"],
	}, nil
}

// hostname returns the configured (offline) or running (live) hostname, or
// "" when it is absent or does not look like one: it ends up in report
// titles, so control characters are refused rather than escaped.
func hostname(env *collector.Env) string {
	name := "/etc/hostname"
	if env.Live {
		name = "/proc/sys/kernel/hostname"
	}
	data, err := env.FS.ReadFileLimit(name, 4096)
	if err != nil {
		return ""
	}
	h, _, _ := strings.Cut(string(data), "\n")
	h = strings.TrimSpace(h)
	if h == "" || len(h) > maxHostname {
		return ""
	}
	for i := 0; i < len(h); i++ {
		if h[i] <= ' ' || h[i] >= 0x7f {
			return ""
		}
	}
	return h
}
