package tls

import (
	"net"
	"net/netip"
	"strconv"

	"github.com/gpuhost/gpuhost/facts"
)

// udpNotJudged notes every UDP listener: the probe speaks TLS over TCP
// only, so DTLS (a VPN, CoAP, WebRTC) and QUIC, whose handshake is TLS
// 1.3, go unjudged, and a report says so rather than leave them out.
func udpNotJudged(ls []facts.Listener) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range ls {
		if l.Proto != "udp" && l.Proto != "udp6" {
			continue
		}
		addr, err := netip.ParseAddr(l.Address)
		if err != nil || l.Port <= 0 || l.Port > 65535 {
			continue
		}
		listen := net.JoinHostPort(addr.String(), strconv.Itoa(l.Port))
		if seen[listen] {
			continue
		}
		seen[listen] = true
		out = append(out, socketLabel(listen, "udp", l.Process)+": not probed: the TLS probe speaks TCP only, so DTLS or QUIC here goes unjudged")
	}
	return out
}
