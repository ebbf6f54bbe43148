// Package osinfo collects what the operating system says of itself: its
// release and hostname (os), the kernels installed and the command line
// the target boots or booted with (kernel), the systemd units an
// administrator enabled and masked and systemd's version (systemd), the
// cgroup hierarchy with the memory limits of the top-level slices (cgroup),
// what modprobe.d lets load and what is loaded (kernel_modules), the kernel
// parameters configured and running (sysctl), and pam_limits' limits
// (limits).
// It also answers, on a live host, whether a unit is active (UnitState),
// for collectors of other domains.
package osinfo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// maxHostname is the longest DNS name; anything longer in /etc/hostname is
// not a hostname.
const maxHostname = 253

// CollectOS reads os-release and the hostname, which the document keeps in
// its target ("" when the target names none). It reads the target alone.
func CollectOS(_ context.Context, env *collect.Env) (release *facts.OS, hostName string, err error) {
	vars, _, err := ReadOSRelease(env.FS)
	if err != nil {
		return nil, "", err
	}
	return osFacts(vars), hostname(env), nil
}

// OSReleasePaths are where os-release(5) is, in the order it is looked for.
var OSReleasePaths = [2]string{"/etc/os-release", "/usr/lib/os-release"}

// MaxOSRelease bounds os-release, a file of a dozen short lines.
const MaxOSRelease = 64 << 10

// ErrNoOSRelease says the target has neither of OSReleasePaths.
var ErrNoOSRelease = errors.New("no os-release")

// noOSRelease is the error of a target without os-release: its message
// names both files and why each could not be read, and it is
// ErrNoOSRelease to errors.Is.
type noOSRelease struct{ error }

func (noOSRelease) Is(target error) bool { return target == ErrNoOSRelease }

// ReadOSRelease reads and parses the target's os-release(5), the one way
// the os collector and vulnerability matching both read it, and returns its
// variables and the file they came from: /etc/os-release or, when that
// cannot be read, /usr/lib/os-release. /etc/os-release is usually a link to
// the other; when the link or the file is broken, the fallback is what
// systemd reads too.
func ReadOSRelease(fsys sysroot.FS) (map[string]string, string, error) {
	primary, fallback := OSReleasePaths[0], OSReleasePaths[1]
	name := primary
	data, err := fsys.ReadFileLimit(primary, MaxOSRelease)
	if err != nil {
		var err2 error
		name = fallback
		data, err2 = fsys.ReadFileLimit(fallback, MaxOSRelease)
		if err2 != nil {
			both := fmt.Errorf("reading os-release: %s: %v; %s: %v", fsys.Display(primary), err, fsys.Display(fallback), err2)
			if sysroot.IsNotExist(err) && sysroot.IsNotExist(err2) {
				return nil, "", noOSRelease{both}
			}
			return nil, "", both
		}
	}
	vars, err := OSReleaseVars(data)
	if err != nil {
		return nil, "", fmt.Errorf("parsing %s: %w", fsys.Display(name), err)
	}
	return vars, name, nil
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

// osFacts are the facts of os-release(5)'s variables.
func osFacts(vars map[string]string) *facts.OS {
	codename := vars["VERSION_CODENAME"]
	if codename == "" {
		codename = vars["UBUNTU_CODENAME"]
	}
	return &facts.OS{
		ID:         vars["ID"],
		VersionID:  vars["VERSION_ID"],
		Codename:   codename,
		PrettyName: vars["PRETTY_NAME"],
	}
}

// hostname returns the configured (offline) or running (live) hostname, or
// "" when it is absent or does not look like one: it ends up in report
// titles, so control characters are refused rather than escaped.
func hostname(env *collect.Env) string {
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
