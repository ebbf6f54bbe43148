package gpu

import (
	"bytes"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// Limits on the kernel logs. Past XIDs are only in the kernel log (NVML's
// event API reports the future): in the text logs rsyslog writes and rotates,
// or, on a journald-only host, in the journal.
const (
	// maxLogBytes is the largest log file read, and the most one rotated
	// file may decompress to. sysroot.FS reads whole files, so a bigger one
	// is refused rather than tailed.
	maxLogBytes = 64 << 20
	// maxLogTotal bounds the text read from all log files together; the
	// oldest rotations are left unread when the newer ones use it up.
	maxLogTotal = 256 << 20
	// maxRotations is how many rotated files (kern.log.1, kern.log.2.gz, ...)
	// are looked for beside each log.
	maxRotations = 9
	// maxXIDEvents keeps the newest events when the logs hold more.
	maxXIDEvents = 1000
	// maxXIDMessage bounds the text kept after the code.
	maxXIDMessage = 200
)

// xidLogs are read in this order; rsyslog writes kernel lines to both on
// Debian and Ubuntu, so events are de-duplicated.
var xidLogs = []string{"/var/log/kern.log", "/var/log/syslog"}

const xidMarker = "NVRM: Xid (PCI:"

// ParseXID parses one kernel log line such as
//
//	Mar  1 11:00:00 host kernel: [ 1234.5] NVRM: Xid (PCI:0000:01:00): 79, pid=1234, name=python, GPU has fallen off the bus.
//	2025-03-01T11:00:00.123456+00:00 host kernel: NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', ...
//
// ok is false for any other line. Time is the syslog timestamp as written
// (RFC 3339, or "Mon _2 15:04:05" without a year), empty when the line has
// none.
func ParseXID(line string) (ev facts.XIDEvent, ok bool) {
	i := strings.Index(line, xidMarker)
	if i < 0 {
		return ev, false
	}
	rest := line[i+len(xidMarker):]
	bus, rest, found := strings.Cut(rest, "):")
	if !found || bus == "" || len(bus) > 32 || strings.ContainsAny(bus, " ()") {
		return ev, false
	}
	rest = strings.TrimLeft(rest, " ")
	n := 0
	for n < len(rest) && n < 6 && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || (n < len(rest) && rest[n] >= '0' && rest[n] <= '9') {
		return ev, false
	}
	code, err := strconv.Atoi(rest[:n])
	if err != nil {
		return ev, false
	}
	msg := strings.TrimSpace(strings.TrimPrefix(rest[n:], ","))
	if len(msg) > maxXIDMessage {
		msg = msg[:maxXIDMessage]
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
	}
	return facts.XIDEvent{
		Code:     code,
		PCIBusID: bus,
		Time:     syslogTime(line[:i]),
		Message:  strings.ToValidUTF8(msg, "?"),
	}, true
}

// syslogTime returns the timestamp a syslog line starts with, as written.
func syslogTime(prefix string) string {
	if len(prefix) >= 15 {
		if _, err := time.Parse(time.Stamp, prefix[:15]); err == nil {
			return prefix[:15]
		}
	}
	tok, _, _ := strings.Cut(prefix, " ")
	if _, ok := parseISO(tok); ok {
		return tok
	}
	return ""
}

// isoLayouts are RFC 3339 and journalctl's short-iso and short-iso-precise,
// whose zone has no colon (2025-03-08T10:11:12+0000).
var isoLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999Z0700"}

func parseISO(s string) (time.Time, bool) {
	for _, layout := range isoLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// xidTime interprets an event's time. A traditional syslog stamp has no
// year: it is taken to be in now's year, or the year before when that would
// put it more than a day in the future.
func xidTime(s string, now time.Time) (time.Time, bool) {
	if t, ok := parseISO(s); ok {
		return t, true
	}
	t, err := time.ParseInLocation(time.Stamp, s, now.Location())
	if err != nil {
		return time.Time{}, false
	}
	at := func(year int) time.Time {
		return time.Date(year, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, now.Location())
	}
	if y := at(now.Year()); !y.After(now.Add(24 * time.Hour)) {
		return y, true
	}
	return at(now.Year() - 1), true
}

// ParseXIDLog returns the XID events in a kernel log, oldest first: the
// newest maxXIDEvents of them, so a log flooded with Xids costs bounded
// memory. Events with a readable time older than window before now are
// dropped; events without one are kept, since they cannot be shown to be old.
func ParseXIDLog(data []byte, now time.Time, window time.Duration) []facts.XIDEvent {
	return parseXIDLog(data, now, window, false)
}

// parseXIDLog is ParseXIDLog for a log in either order. newestFirst says
// the log is newest first (journalctl --reverse): then the first
// maxXIDEvents are the ones kept, and they are returned in the log's order.
func parseXIDLog(data []byte, now time.Time, window time.Duration, newestFirst bool) []facts.XIDEvent {
	var out []facts.XIDEvent
	marker := []byte(xidMarker)
	for len(data) > 0 {
		// Skip straight to the next marker: kernel logs are mostly other lines.
		i := bytes.Index(data, marker)
		if i < 0 {
			break
		}
		start := bytes.LastIndexByte(data[:i], '\n') + 1
		end := bytes.IndexByte(data[i:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += i
		}
		if ev, ok := ParseXID(string(data[start:end])); ok {
			if t, ok := xidTime(ev.Time, now); !ok || window <= 0 || !t.Before(now.Add(-window)) {
				out = append(out, ev)
				switch {
				case newestFirst && len(out) == maxXIDEvents:
					return out
				case len(out) == 2*maxXIDEvents:
					// Drop the oldest half; amortised, each event moves once.
					out = append(out[:0], out[maxXIDEvents:]...)
				}
			}
		}
		if end >= len(data) {
			break
		}
		data = data[end+1:]
	}
	if len(out) > maxXIDEvents {
		out = out[len(out)-maxXIDEvents:]
	}
	return out
}

// readKernelModule reads the loaded kernel module's version and flavour.
// Its absence is not an error: NVML will say whether the driver is loaded.
func (c *NVML) readKernelModule(env *collect.Env, g *facts.GPU) {
	data, err := env.FS.ReadFileLimit(procVersion, 64<<10)
	if err != nil {
		return
	}
	g.KernelModuleVersion, g.KernelModuleType = ParseKernelModuleVersion(string(data))
}

// ParseKernelModuleVersion reads /proc/driver/nvidia/version:
//
//	NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Wed Jul 30 ...
//	NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build ...
//
// It returns the version and "open" or "proprietary"; empty strings when the
// text has no NVRM version line.
func ParseKernelModuleVersion(text string) (version, kind string) {
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(line, "NVRM version:")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(rest) {
			if isDriverVersion(f) {
				version = f
				break
			}
		}
		if version == "" {
			return "", ""
		}
		kind = "proprietary"
		if strings.Contains(rest, "Open Kernel Module") {
			kind = "open"
		}
		return version, kind
	}
	return "", ""
}

// isDriverVersion accepts 535.261.03 and 535.54: dot-separated digits,
// starting with a three-digit branch.
func isDriverVersion(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 || len(parts[0]) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || len(p) > 4 || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}
