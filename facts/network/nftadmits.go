package network

import (
	"math/bits"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// What the evaluator reports: for each family, protocol and port, the
// first rule (or policy) that admitted it, kept only where the port got
// through every base chain, and rendered as runs of ports one rule admits.

func (e *evaluator) admit(proto int, ports *portSet, ref string, at collect.FileLine) {
	idx, ok := e.refIdx[ref]
	if !ok {
		if e.refIdx == nil {
			e.refIdx = map[string]uint16{}
		}
		if len(e.refs) >= 65535 {
			return
		}
		e.refs = append(e.refs, ref)
		e.places = append(e.places, at)
		idx = uint16(len(e.refs))
		e.refIdx[ref] = idx
	}
	owner := e.ownerOf(proto)
	for w, word := range ports {
		for word != 0 {
			bit := bits.TrailingZeros64(word)
			word &^= 1 << bit
			if p := w*64 + bit; owner[p] == 0 {
				owner[p] = idx
			}
		}
	}
}

func (e *evaluator) ownerOf(proto int) *[65536]uint16 {
	f, pr := 0, 0
	if e.family == "ip6" {
		f = 1
	}
	if proto == protoUDP {
		pr = 1
	}
	if e.owner[f][pr] == nil {
		e.owner[f][pr] = new([65536]uint16)
	}
	return e.owner[f][pr]
}

// keep trims the admissions of proto to the ports that got through every
// base chain; an accept in one base chain is not the last word.
func (e *evaluator) keep(proto int, passed *portSet) {
	owner := e.ownerOf(proto)
	for p := range owner {
		if owner[p] != 0 && !passed.has(p) {
			owner[p] = 0
		}
	}
}

// facts renders the admissions of both families as port ranges, IPv4's
// first rule for a port winning over IPv6's.
func (e *evaluator) facts() []facts.FirewallAdmit {
	return e.render(func(pr, port int) uint16 {
		if ip := e.owner[0][pr]; ip != nil && ip[port] != 0 {
			return ip[port]
		}
		if ip6 := e.owner[1][pr]; ip6 != nil {
			return ip6[port]
		}
		return 0
	})
}

// familyFacts renders the admissions of one family (an index into
// nftFamilies) as port ranges.
func (e *evaluator) familyFacts(fam int) []facts.FirewallAdmit {
	return e.render(func(pr, port int) uint16 {
		if o := e.owner[fam][pr]; o != nil {
			return o[port]
		}
		return 0
	})
}

// render turns the first admitting rule of each port, ownerAt(proto index,
// port), into runs of ports admitted by one rule.
func (e *evaluator) render(ownerAt func(pr, port int) uint16) []facts.FirewallAdmit {
	out := []facts.FirewallAdmit{}
	for pr, p := range protoNames {
		for port := 0; port < 65536; port++ {
			idx := ownerAt(pr, port)
			if idx == 0 {
				continue
			}
			end := port
			for end+1 < 65536 && ownerAt(pr, end+1) == idx {
				end++
			}
			at := e.places[idx-1]
			out = append(out, facts.FirewallAdmit{Proto: p.name, From: port, To: end, Rule: e.refs[idx-1], File: at.File, Line: at.Line})
			port = end
		}
	}
	return out
}
