package network

import (
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// maxIfInet6 bounds /proc/net/if_inet6, one line of ~60 bytes per
	// address.
	maxIfInet6 = 4 << 20
	// maxIPv6Conf bounds the entries of /proc/sys/net/ipv6/conf read; a
	// host with more is not shown to have IPv6 off by disable_ipv6.
	maxIPv6Conf = 4096
)

const (
	ifInet6  = "/proc/net/if_inet6"
	ipv6Conf = "/proc/sys/net/ipv6/conf"
)

// ipv6Source reads the files that tell whether IPv6 is on: the scanned
// tree's /proc, or the kernel's as seen from inside another namespace.
type ipv6Source interface {
	// read returns a file's content, and false when it does not exist.
	read(name string, limit int64) ([]byte, bool, error)
	// names lists a directory, at most limit entries.
	names(dir string, limit int) ([]string, error)
}

// liveIPv6 reads whether IPv6 is on in the network namespace the live scan
// judges: the scanner's own through the scanned tree's /proc, or the one
// env.NetNS names, entered for the read. /proc/net and /proc/sys/net show
// the namespace of the thread that reads them.
func liveIPv6(env *collect.Env) *facts.IPv6State {
	if env.NetNS == "" {
		return readIPv6State(fsIPv6Source{env.FS})
	}
	return ipv6StateIn(env.NetNS)
}

// readIPv6State decides from evidence only: IPv6 is off when the kernel
// has none, when disable_ipv6 is 1 in every entry of the conf directory
// (all, default and each interface, so a new interface starts off too), or
// when no interface but the loopback holds an address, the loopback being
// unreachable from another host. Anything unclear leaves it on.
func readIPv6State(src ipv6Source) *facts.IPv6State {
	data, ok, err := src.read(ifInet6, maxIfInet6)
	if err != nil {
		return unknownIPv6(err)
	}
	if !ok {
		return &facts.IPv6State{Evidence: ifInet6 + " does not exist: the kernel has no IPv6 (the ipv6 module is absent or ipv6.disable=1)"}
	}
	if entries, off := allDisabled(src); off {
		return &facts.IPv6State{Evidence: fmt.Sprintf("disable_ipv6 is 1 in every entry of %s (%s)", ipv6Conf, listSome(entries))}
	}
	var ifaces, onLo []string
	for _, l := range textfile.Lines(data) {
		f := strings.Fields(l)
		// address, index, prefix length, scope, flags, device
		switch {
		case len(f) != 6:
		case f[5] == "lo" && f[0] != loopbackHex:
			// An address other than ::1 on the loopback is the host's
			// own, and another host routes to it through any interface.
			onLo = append(onLo, hexIPv6(f[0]))
		case f[5] != "lo" && !slices.Contains(ifaces, f[5]):
			ifaces = append(ifaces, f[5])
		}
	}
	switch {
	case len(onLo) > 0:
		return &facts.IPv6State{Enabled: true, Evidence: "lo holds " + listSome(onLo) + ", which other hosts can route to (" + ifInet6 + ")"}
	case len(ifaces) == 0:
		return &facts.IPv6State{Evidence: "no interface but lo has an IPv6 address, and lo has only ::1 (" + ifInet6 + ")"}
	}
	return &facts.IPv6State{Enabled: true, Evidence: "IPv6 addresses on " + listSome(ifaces) + " (" + ifInet6 + ")"}
}

// loopbackHex is ::1 as /proc/net/if_inet6 writes it.
const loopbackHex = "00000000000000000000000000000001"

// hexIPv6 renders an address as /proc/net/if_inet6 writes it (32 hex
// digits) in the usual notation, or leaves what it cannot read as it is.
func hexIPv6(h string) string {
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != net.IPv6len {
		return h
	}
	return net.IP(b).String()
}

// allDisabled is true when every entry of the conf directory has
// disable_ipv6 set; it returns the entries it read.
func allDisabled(src ipv6Source) ([]string, bool) {
	entries, err := src.names(ipv6Conf, maxIPv6Conf+1)
	if err != nil || len(entries) == 0 || len(entries) > maxIPv6Conf {
		return nil, false
	}
	slices.Sort(entries)
	for _, e := range entries {
		data, ok, err := src.read(ipv6Conf+"/"+e+"/disable_ipv6", 64)
		if err != nil || !ok || strings.TrimSpace(string(data)) != "1" {
			return nil, false
		}
	}
	return entries, true
}

func unknownIPv6(err error) *facts.IPv6State {
	return &facts.IPv6State{Enabled: true, Evidence: "unknown, so taken to be on: " + err.Error()}
}

// listSome names up to four items and counts the rest.
func listSome(items []string) string {
	if len(items) <= 4 {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:4], ", ") + " and " + strconv.Itoa(len(items)-4) + " more"
}

// fsIPv6Source reads the scanned tree.
type fsIPv6Source struct{ fsys sysroot.FS }

func (s fsIPv6Source) read(name string, limit int64) ([]byte, bool, error) {
	return textfile.ReadOptionalLimit(s.fsys, name, limit)
}

func (s fsIPv6Source) names(dir string, limit int) ([]string, error) {
	entries, err := s.fsys.ReadDir(dir)
	if sysroot.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries[:min(len(entries), limit)] {
		out = append(out, e.Name())
	}
	return out, nil
}
