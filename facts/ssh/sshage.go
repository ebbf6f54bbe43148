package ssh

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// defaultSSHDPidFile is where Debian's and Ubuntu's sshd write their
	// pid when PidFile is unset.
	defaultSSHDPidFile = "/run/sshd.pid"
	// maxProcStat bounds /proc/PID/stat, one line.
	maxProcStat = 4096
	// maxKernelStat bounds /proc/stat, which has a line per CPU and per
	// interrupt source.
	maxKernelStat = 4 << 20
	// maxPidFile bounds a pid file: one number and a newline.
	maxPidFile = 64
	// userHZ is the unit of starttime in /proc/PID/stat: the kernel
	// reports it in USER_HZ, which is 100 on every architecture Linux
	// exports to user space.
	userHZ = 100
	// startSlack covers how early a start time read from /proc may be:
	// the boot time is in whole seconds and starttime in ticks, both cut
	// down. A file modified within it of the start may have been read by
	// that start, so it does not count as newer; a pid file's time is
	// exact and needs none.
	startSlack = time.Second + time.Second/userHZ
)

// sshdAge fills what tells whether daemon pid runs the files cfg reads
// now: when it last loaded them and whether one changed since.
func sshdAge(fsys sysroot.FS, pid int, cfg *SSHDConfig) facts.SSHDaemonAge {
	var age facts.SSHDaemonAge
	started, err := processStart(fsys, pid)
	if err != nil {
		age.AgeError = err.Error()
		return age
	}
	age.StartedAt = stamp(started)
	loaded, slack := started, startSlack
	age.LoadedFrom = "process_start"
	if t, ok := pidFileTime(fsys, pid, cfg); ok && t.After(started.Add(-startSlack)) {
		loaded, slack = t, 0
		age.LoadedFrom = "pid_file"
	}
	age.LoadedAt = stamp(loaded)
	newest, which, err := newestChange(fsys, cfg)
	if err != nil {
		age.AgeError = err.Error()
		return age
	}
	age.NewestConfig = which
	if age.NewestConfig != "" {
		age.NewestConfigModified = stamp(newest)
		age.ConfigNewer = newest.After(loaded.Add(slack))
	}
	return age
}

// newestChange is the latest change among the files cfg read and the
// folders its Include patterns look in (a drop-in removed since the daemon
// started changes what a reload reads, and shows only as its folder's
// change), and which it was; "" when none could be read.
func newestChange(fsys sysroot.FS, cfg *SSHDConfig) (time.Time, string, error) {
	var newest time.Time
	var which string
	names := append(slices.Clone(cfg.paths), cfg.includeDirs...)
	for i, name := range names {
		shown := fsys.Display(name)
		if i < len(cfg.paths) {
			shown = cfg.Files[i]
		}
		fi, err := fsys.Stat(name)
		if err != nil {
			if sysroot.IsNotExist(err) {
				continue
			}
			return newest, "", fmt.Errorf("reading the modification time of %s: %v", shown, err)
		}
		if m := changed(fi); which == "" || m.After(newest) {
			newest, which = m, shown
			if i >= len(cfg.paths) {
				which += " (a file added or removed)"
			}
		}
	}
	return newest, which, nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// changed is when a file last changed: the later of its modification time
// and its inode's change time, which no one sets by hand. A file deployed
// with its old modification time kept (cp -p, rsync -t, tar) is new all
// the same. A file system that keeps no change time gives the first.
func changed(fi fs.FileInfo) time.Time {
	m := fi.ModTime()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if c := time.Unix(st.Ctim.Sec, st.Ctim.Nsec); c.After(m) {
			return c
		}
	}
	return m
}

// processStart returns when pid started: /proc/PID/stat gives it in clock
// ticks since boot, /proc/stat the boot time. Both stay put from one read
// to the next, so the facts of an unchanged daemon do too.
func processStart(fsys sysroot.FS, pid int) (time.Time, error) {
	statName := "/proc/" + strconv.Itoa(pid) + "/stat"
	stat, err := fsys.ReadFileLimit(statName, maxProcStat)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the start time of pid %d: %w", pid, err)
	}
	ticks, err := ParseProcStartTime(string(stat))
	if err != nil {
		return time.Time{}, fmt.Errorf("parsing %s: %w", statName, err)
	}
	kstat, err := fsys.ReadFileLimit("/proc/stat", maxKernelStat)
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the boot time: %w", err)
	}
	boot, err := ParseBootTime(string(kstat))
	if err != nil {
		return time.Time{}, fmt.Errorf("parsing /proc/stat: %w", err)
	}
	return boot.Add(time.Duration(ticks) * (time.Second / userHZ)), nil
}

// ParseProcStartTime returns field 22 of a /proc/PID/stat line, starttime.
// The command name (field 2) is in parentheses and may hold spaces and
// parentheses itself, so the fields are counted from its last ")".
func ParseProcStartTime(stat string) (uint64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, errors.New("no command name")
	}
	fields := strings.Fields(stat[end+1:])
	// fields[0] is field 3 (state).
	const starttime = 22 - 3
	if len(fields) <= starttime {
		return 0, fmt.Errorf("%d fields after the command name, want more than %d", len(fields), starttime)
	}
	ticks, err := strconv.ParseUint(fields[starttime], 10, 64)
	if err != nil || ticks > uint64(time.Duration(1<<62)/(time.Second/userHZ)) {
		return 0, fmt.Errorf("starttime %q is not a tick count", fields[starttime])
	}
	return ticks, nil
}

// ParseBootTime returns the boot time of a /proc/stat buffer, its "btime"
// line: seconds since the epoch.
func ParseBootTime(s string) (time.Time, error) {
	for line := range strings.Lines(s) {
		v, ok := strings.CutPrefix(line, "btime ")
		if !ok {
			continue
		}
		secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || secs <= 0 || secs > 1<<40 {
			return time.Time{}, fmt.Errorf("btime %q is not a time", strings.TrimSpace(v))
		}
		return time.Unix(secs, 0), nil
	}
	return time.Time{}, errors.New("no btime line")
}

// pidFileTime returns the modification time of the daemon's PidFile when
// that file names pid: another daemon's file, or one left from an earlier
// run, says nothing about this one.
func pidFileTime(fsys sysroot.FS, pid int, cfg *SSHDConfig) (time.Time, bool) {
	name := defaultSSHDPidFile
	if v := cfg.Values["pidfile"]; len(v) > 0 {
		name = v[0]
	}
	if strings.EqualFold(name, "none") || !path.IsAbs(name) {
		return time.Time{}, false
	}
	data, err := fsys.ReadFileLimit(name, maxPidFile)
	if err != nil || strings.TrimSpace(string(data)) != strconv.Itoa(pid) {
		return time.Time{}, false
	}
	fi, err := fsys.Stat(name)
	if err != nil {
		return time.Time{}, false
	}
	return fi.ModTime(), true
}
