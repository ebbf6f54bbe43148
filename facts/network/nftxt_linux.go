package network

import (
	"encoding/binary"
	"net"

	"github.com/google/nftables/expr"
	"github.com/google/nftables/xt"
)

// The xtables matches and targets iptables-nft leaves in the kernel's
// ruleset, read as far as they decide the input path and destination NAT.

// xtNAT reads an xtables DNAT or REDIRECT target's first range: the
// address (DNAT) and port, where its flags say they are set.
func xtNAT(name string, info xt.InfoAny) (*natTarget, bool) {
	var flags uint
	var ip net.IP
	var port uint16
	switch i := info.(type) {
	case *xt.NatRange:
		flags, ip, port = i.Flags, i.MinIP, i.MinPort
	case *xt.NatRange2:
		flags, ip, port = i.Flags, i.MinIP, i.MinPort
	case *xt.NatIPv4MultiRangeCompat:
		if len(*i) != 1 {
			return nil, false
		}
		flags, ip, port = (*i)[0].Flags, (*i)[0].MinIP, (*i)[0].MinPort
	default:
		return nil, false
	}
	t := &natTarget{}
	if xt.NatRangeFlags(flags)&xt.NatRangeProtoSpecified != 0 {
		t.port = int(port)
	}
	if name == "DNAT" {
		if xt.NatRangeFlags(flags)&xt.NatRangeMapIPs == 0 || ip == nil {
			return nil, false
		}
		t.addr = ip.String()
	}
	return t, true
}

// xtMatch reads the two xtables matches iptables-nft (and so ufw) leaves
// in the kernel for the input path: conntrack's state and multiport's
// destination ports. Anything else in them is left unmodeled.
func xtMatch(r *fwRule, m *expr.Match) (string, bool) {
	switch info := m.Info.(type) {
	case *xt.ConntrackMtinfo3:
		return ctMatch(r, &info.ConntrackMtinfoBase, info.StateMask)
	case *xt.ConntrackMtinfo2:
		return ctMatch(r, &info.ConntrackMtinfoBase, info.StateMask)
	case *xt.ConntrackMtinfo1:
		return ctMatch(r, &info.ConntrackMtinfoBase, uint16(info.StateMask))
	case *xt.Unknown:
		if m.Name == "multiport" && m.Rev == 1 {
			return multiportMatch(r, *info)
		}
	case *xt.AddrTypeV1:
		return addrTypeLocal(r, info.Source, info.Dest, info.Flags == 0)
	case *xt.AddrType:
		return addrTypeLocal(r, info.Source, info.Dest, !info.InvertSource && !info.InvertDest)
	}
	return "", false
}

// addrTypeLocal reads "-m addrtype --dst-type LOCAL" (Docker's jump to
// its DNAT chain): every connection to the host matches it, none it
// forwards, and no reply.
func addrTypeLocal(r *fwRule, src, dst uint16, plain bool) (string, bool) {
	if !plain || src != 0 || dst != uint16(xt.AddrTypeLocal) {
		return "", false
	}
	r.toLocal = true
	return "addrtype dst LOCAL", true
}

func ctMatch(r *fwRule, base *xt.ConntrackMtinfoBase, states uint16) (string, bool) {
	if base.MatchFlags&^uint16(xt.ConntrackState|xt.ConntrackStateAlias) != 0 || base.InvertFlags != 0 {
		return "", false
	}
	r.ct = uint32(states)
	return "ct state " + ctStates(uint32(states)), true
}

// multiportMatch decodes struct xt_multiport_v1: flags, count, 15 ports,
// 15 range flags and invert, ports in host byte order.
func multiportMatch(r *fwRule, b []byte) (string, bool) {
	// XT_MULTIPORT_DESTINATION is 1.
	const dst, maxPorts = 1, 15
	if len(b) < 2+2*maxPorts+maxPorts+1 || b[0] != dst || int(b[1]) > maxPorts || b[2+3*maxPorts] != 0 {
		return "", false
	}
	n := int(b[1])
	port := func(i int) int { return int(binary.NativeEndian.Uint16(b[2+2*i:])) }
	var ps portSet
	for i := 0; i < n; i++ {
		if b[2+2*maxPorts+i] != 0 && i+1 < n {
			ps.add(port(i), port(i+1))
			i++
			continue
		}
		ps.add(port(i), port(i))
	}
	r.restrictPorts(&ps)
	return protoWord(r.protos) + " dport " + renderPorts(&ps, ""), true
}
