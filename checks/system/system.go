// Package system collects facts about the operating system itself: release,
// kernel, packages, cgroup mode, encryption, listening sockets, firewall,
// systemd units, the baked manifest and, on a live host, TLS probes of every
// listening TCP port.
//
// Every collector reads through env.FS, including /proc and /sys on a live
// host, so that a test can fake a host with a directory tree and so that an
// untrusted rootfs can never lead a read outside itself. Source fields in the
// facts use root-relative paths ("/etc/default/grub") so that an image and the
// host booted from it report the same names; error messages use
// env.FS.Display so that the user can find the file.
package system

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/sysroot"
)

// Collectors returns the system collectors; each names in Needs the ones
// whose facts it reads.
func Collectors() []collector.Collector {
	return []collector.Collector{
		osCollector{},
		kernelCollector{},
		packagesCollector{},
		cgroupCollector{},
		kubeletCollector{},
		encryptionCollector{},
		networkCollector{},
		firewallCollector{},
		systemdCollector{},
		manifestCollector{},
		containersCollector{},
		sbomCollector{},
		tlsProbeCollector{},
	}
}

// readlinker is implemented by sysroot views that can read a symlink's
// target without following it. It is asserted rather than required so that
// fakes of sysroot.FS elsewhere keep compiling.
type readlinker interface {
	Readlink(name string) (string, error)
}

// readlink returns the target of a symlink, or an error when the view cannot
// read links.
func readlink(fsys sysroot.FS, name string) (string, error) {
	rl, ok := fsys.(readlinker)
	if !ok {
		return "", fmt.Errorf("reading link %s: %w", fsys.Display(name), fs.ErrInvalid)
	}
	return rl.Readlink(name)
}

// readOptional reads a file that may legitimately be absent: (nil, false,
// nil) means absent.
func readOptional(fsys sysroot.FS, name string) ([]byte, bool, error) {
	data, err := fsys.ReadFile(name)
	if err != nil {
		if sysroot.IsNotExist(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return data, true, nil
}

// lines splits text into lines without a trailing empty one, dropping CRs.
func lines(data []byte) []string {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
