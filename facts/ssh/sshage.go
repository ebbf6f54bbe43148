package ssh

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
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
	var newest time.Time
	for i, name := range cfg.paths {
		fi, err := fsys.Stat(name)
		if err != nil {
			// A file gone since the daemon read it changes what a reload
			// would read, but it has no time to compare.
			if sysroot.IsNotExist(err) {
				continue
			}
			age.AgeError = fmt.Sprintf("reading the modification time of %s: %v", cfg.Files[i], err)
			return age
		}
		if m := fi.ModTime(); age.NewestConfig == "" || m.After(newest) {
			newest, age.NewestConfig = m, cfg.Files[i]
		}
	}
	if age.NewestConfig != "" {
		age.NewestConfigModified = stamp(newest)
		age.ConfigNewer = newest.After(loaded.Add(slack))
	}
	return age
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

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
