// Package network collects the network facts: on a live host the listening
// sockets and the processes that own them (network), and the firewall
// (firewall): ufw or the nftables configuration in an image, the ruleset
// the kernel holds on a live host, read over netlink and followed through
// jumps and sets to the ports the input path admits, for IPv4 and IPv6
// apart, with whether IPv6 is on at all.
package network

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// maxProcNet bounds one /proc/net table; a line is ~150 bytes, so this
	// allows well over 100,000 sockets.
	maxProcNet = 32 << 20
	// maxPIDs and maxFDs bound the walk that maps sockets to processes.
	maxPIDs = 4096
	maxFDs  = 4096
)

// CollectListeners lists a live host's listening sockets with the process
// that holds each. An offline rootfs has none to list. It reads the target
// alone, needing no other collector's facts.
func CollectListeners(ctx context.Context, env *collect.Env) ([]facts.Listener, error) {
	if !env.Live {
		return nil, collect.NotApplicable("an offline rootfs has no listening sockets")
	}
	var all []procSocket
	for _, t := range []struct{ file, proto, state string }{
		{"/proc/net/tcp", "tcp", "0A"},
		{"/proc/net/tcp6", "tcp6", "0A"},
		{"/proc/net/udp", "udp", "07"},
		{"/proc/net/udp6", "udp6", "07"},
	} {
		data, ok, err := textfile.ReadOptionalLimit(env.FS, t.file, maxProcNet)
		if err != nil {
			return nil, fmt.Errorf("reading sockets: %w", err)
		}
		if !ok {
			// A kernel without IPv6 has no tcp6/udp6.
			continue
		}
		socks, err := parseProcNet(data, t.proto, t.state)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", env.FS.Display(t.file), err)
		}
		all = append(all, socks...)
	}
	owners := socketOwners(ctx, env.FS, all, logger(env))
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	seen := map[facts.Listener]bool{}
	listening := []facts.Listener{}
	for _, s := range all {
		l := facts.Listener{Proto: s.Proto, Address: s.Addr.String(), Port: int(s.Port)}
		if o, ok := owners[s.Inode]; ok {
			l.Process, l.PID = o.comm, o.pid
		}
		if seen[l] {
			continue
		}
		seen[l] = true
		listening = append(listening, l)
	}
	slices.SortFunc(listening, func(a, b facts.Listener) int {
		return cmp.Or(strings.Compare(a.Proto, b.Proto), cmp.Compare(a.Port, b.Port),
			strings.Compare(a.Address, b.Address), cmp.Compare(a.PID, b.PID))
	})
	return listening, nil
}

func logger(env *collect.Env) *slog.Logger {
	if env.Log != nil {
		return env.Log
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// procSocket is one socket from a /proc/net table.
type procSocket struct {
	Proto string
	Addr  netip.Addr
	Port  uint16
	Inode uint64
}

// parseProcNet reads a /proc/net/{tcp,udp}[6] table and keeps the sockets in
// the given state (hex, as the kernel prints it).
func parseProcNet(data []byte, proto, state string) ([]procSocket, error) {
	var out []procSocket
	for i, l := range textfile.Lines(data) {
		fields := strings.Fields(l)
		if len(fields) == 0 || (i == 0 && fields[0] == "sl") {
			continue
		}
		if len(fields) < 10 || !strings.HasSuffix(fields[0], ":") {
			return nil, fmt.Errorf("line %d: malformed socket line", i+1)
		}
		if fields[3] != state {
			continue
		}
		addr, port, err := parseHexAddr(fields[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		inode, err := strconv.ParseUint(fields[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: bad inode %q", i+1, textfile.Truncate(fields[9], 24))
		}
		out = append(out, procSocket{Proto: proto, Addr: addr, Port: port, Inode: inode})
	}
	return out, nil
}

// parseHexAddr decodes the kernel's "ADDR:PORT" form: the address is the
// in-memory bytes of 32-bit words printed in host (little-endian) order, the
// port is plain big hex.
func parseHexAddr(s string) (netip.Addr, uint16, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok || len(p) != 4 {
		return netip.Addr{}, 0, fmt.Errorf("bad address %q", textfile.Truncate(s, 48))
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("bad port %q", p)
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.Addr{}, 0, fmt.Errorf("bad address %q", textfile.Truncate(a, 40))
	}
	for w := 0; w < len(raw); w += 4 {
		raw[w], raw[w+1], raw[w+2], raw[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
	}
	if len(raw) == 4 {
		return netip.AddrFrom4([4]byte(raw)), uint16(port), nil
	}
	return netip.AddrFrom16([16]byte(raw)), uint16(port), nil
}

type owner struct {
	pid  int
	comm string
}

// socketOwners maps socket inodes to the lowest pid holding them, walking
// /proc/<pid>/fd. Processes come and go during the walk and unprivileged
// scans cannot read other users' fds, so both are skipped silently; the
// listener then simply has no process.
func socketOwners(ctx context.Context, fsys sysroot.FS, socks []procSocket, log *slog.Logger) map[uint64]owner {
	owners := map[uint64]owner{}
	want := map[uint64]bool{}
	for _, s := range socks {
		if s.Inode != 0 {
			want[s.Inode] = true
		}
	}
	if len(want) == 0 {
		return owners
	}
	if !textfile.CanReadlink(fsys) {
		log.Debug("socket owners unknown: the filesystem view cannot read links")
		return owners
	}
	entries, err := fsys.ReadDir("/proc")
	if err != nil {
		log.Debug("socket owners unknown", "err", err)
		return owners
	}
	pids := 0
	for _, e := range entries {
		if ctx.Err() != nil {
			return owners
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		if pids++; pids > maxPIDs {
			log.Debug("socket owner walk stopped", "max_pids", maxPIDs)
			break
		}
		fdDir := "/proc/" + e.Name() + "/fd"
		fds, err := fsys.ReadDir(fdDir)
		if err != nil {
			continue
		}
		if len(fds) > maxFDs {
			fds = fds[:maxFDs]
		}
		for _, fd := range fds {
			target, err := textfile.Readlink(fsys, fdDir+"/"+fd.Name())
			if err != nil {
				continue
			}
			num, ok := strings.CutPrefix(target, "socket:[")
			if !ok {
				continue
			}
			inode, err := strconv.ParseUint(strings.TrimSuffix(num, "]"), 10, 64)
			if err != nil || !want[inode] {
				continue
			}
			if o, ok := owners[inode]; ok && o.pid < pid {
				continue
			}
			owners[inode] = owner{pid: pid, comm: processName(fsys, e.Name())}
		}
	}
	return owners
}

func processName(fsys sysroot.FS, pid string) string {
	data, err := fsys.ReadFileLimit("/proc/"+pid+"/comm", 256)
	if err != nil {
		return ""
	}
	name := strings.TrimSpace(string(data))
	if textfile.CheckLine([]byte(name)) != nil {
		return ""
	}
	return name
}

var errNoListeners = errors.New("no listening sockets known")
