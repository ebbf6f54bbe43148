// Package daemon finds the daemons running on a live host and the
// configuration files their command lines name, through /proc of the
// scanned tree: on a host, what runs is judged by the file it was started
// with, which need not be the default one.
package daemon

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// maxCmdline bounds /proc/PID/cmdline (the kernel allows up to
	// ARG_MAX, far more than a daemon's command line needs).
	maxCmdline = 64 << 10
	// maxProcScan bounds the processes looked at for running daemons.
	maxProcScan = 4096
)

// ReadCmdline returns the arguments of a process. Daemons that rewrite
// their title ("sshd: /usr/sbin/sshd -D [listener] ...", "nginx: master
// process /usr/sbin/nginx -c /x.conf") leave one string; that is split at
// spaces after the title's prefix, so a path with a space in it reads
// wrong there, as it does in ps.
func ReadCmdline(fsys sysroot.FS, pid int) ([]string, error) {
	name := "/proc/" + strconv.Itoa(pid) + "/cmdline"
	data, err := fsys.ReadFileLimit(name, maxCmdline)
	if err != nil {
		return nil, fmt.Errorf("reading the command line of pid %d: %w", pid, err)
	}
	return SplitCmdline(string(data)), nil
}

// SplitCmdline parses a /proc/PID/cmdline buffer as ReadCmdline describes.
func SplitCmdline(data string) []string {
	argv := strings.Split(strings.TrimRight(data, "\x00"), "\x00")
	if len(argv) == 1 {
		s := argv[0]
		for _, prefix := range []string{"sshd: ", "nginx: master process "} {
			if rest, ok := strings.CutPrefix(s, prefix); ok {
				if i := strings.Index(rest, " [listener]"); i >= 0 {
					rest = rest[:i]
				}
				return strings.Fields(rest)
			}
		}
		if strings.HasPrefix(s, "nginx: ") {
			// A worker, cache manager or cache loader: no configuration of
			// its own.
			return nil
		}
	}
	if len(argv) == 1 && argv[0] == "" {
		return nil
	}
	return argv
}

// Getopt walks argv[1:] as POSIX getopt does with the given options that
// take an argument, calling set for each of those. Flags without an
// argument are skipped; the walk stops at the first non-option.
func Getopt(argv []string, withArg string, set func(opt byte, val string)) error {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			return nil
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			if strings.IndexByte(withArg, c) < 0 {
				continue
			}
			val := a[j+1:]
			if val == "" {
				if i+1 >= len(argv) {
					return fmt.Errorf("option -%c needs an argument", c)
				}
				i++
				val = argv[i]
			}
			set(c, val)
			break
		}
	}
	return nil
}

// AbsoluteFor makes a path a process named relative to its working
// directory absolute, through /proc/PID/cwd.
func AbsoluteFor(fsys sysroot.FS, pid int, name string) (string, error) {
	if path.IsAbs(name) {
		return path.Clean(name), nil
	}
	rl, ok := fsys.(interface{ Readlink(string) (string, error) })
	if !ok {
		return "", fmt.Errorf("pid %d names %q relative to a working directory that cannot be read", pid, name)
	}
	cwd, err := rl.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	if err != nil {
		return "", fmt.Errorf("reading the working directory of pid %d: %w", pid, err)
	}
	if !path.IsAbs(cwd) {
		return "", errors.New("working directory is not absolute")
	}
	return path.Join(cwd, name), nil
}

// Daemon is a running daemon and the configuration file it loaded.
type Daemon struct {
	PID  int
	Conf string
}

// Running lists, by pid, the running processes named name (their
// comm and argv[0]) with the configuration file confOf finds on their
// command line. Processes that end during the walk, or whose files cannot
// be read, are left out.
func Running(fsys sysroot.FS, name string, confOf func(argv []string) (string, error)) ([]Daemon, error) {
	entries, err := fsys.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	var out []Daemon
	seen := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		if seen++; seen > maxProcScan {
			break
		}
		comm, err := fsys.ReadFileLimit("/proc/"+e.Name()+"/comm", 256)
		if err != nil || strings.TrimSpace(string(comm)) != name {
			continue
		}
		argv, err := ReadCmdline(fsys, pid)
		if err != nil || len(argv) == 0 || path.Base(argv[0]) != name {
			continue
		}
		conf, err := confOf(argv)
		if err != nil {
			continue
		}
		if conf, err = AbsoluteFor(fsys, pid, conf); err != nil {
			continue
		}
		out = append(out, Daemon{PID: pid, Conf: conf})
	}
	slices.SortFunc(out, func(a, b Daemon) int { return a.PID - b.PID })
	return out, nil
}
