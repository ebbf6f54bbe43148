package network

import (
	"encoding/binary"
	"net"
	"strconv"

	"github.com/google/nftables/expr"
)

// reg is what a rule has loaded into a register.
type reg struct {
	kind string // l4proto, dport, ctstate, iif, iifname, immediate, or a description
	mask uint32
	data []byte // an immediate's value
}

// registers is what each register of a rule holds, as far as the rule's
// expressions so far say.
type registers map[uint32]reg

// load notes what e puts in a register, and reports whether e is an
// expression that only loads one.
func (regs registers) load(c *fwChain, r *fwRule, e expr.Any) bool {
	switch e := e.(type) {
	case *expr.Meta:
		if !e.SourceRegister {
			regs[e.Register] = reg{kind: metaKind(e.Key)}
		}
	case *expr.Payload:
		if e.OperationType == expr.PayloadLoad {
			fam := c.family
			if r.family != "" {
				fam = r.family
			}
			regs[e.DestRegister] = reg{kind: payloadKind(fam, e)}
		}
	case *expr.Immediate:
		regs[e.Register] = reg{kind: "immediate", data: e.Data}
	case *expr.Fib:
		regs[e.Register] = reg{kind: "fib"}
	case *expr.Exthdr:
		regs[e.DestRegister] = reg{kind: "exthdr"}
	case *expr.Ct:
		if !e.SourceRegister {
			kind := "ct key " + strconv.Itoa(int(e.Key))
			if e.Key == expr.CtKeySTATE {
				kind = "ctstate"
			}
			regs[e.Register] = reg{kind: kind}
		}
	case *expr.Bitwise:
		src, ok := regs[e.SourceRegister]
		if ok && src.kind == "ctstate" && len(e.Mask) == 4 {
			regs[e.DestRegister] = reg{kind: "ctstate", mask: binary.NativeEndian.Uint32(e.Mask)}
		} else {
			regs[e.DestRegister] = reg{kind: src.kind + " (masked)"}
		}
	default:
		return false
	}
	return true
}

// port reads a nat target's port from the register a nat expression names
// (0: none, the port stays as it came).
func (regs registers) port(n uint32, unknown func(string)) int {
	if n == 0 {
		return 0
	}
	if rg := regs[n]; rg.kind == "immediate" && len(rg.data) == 2 {
		return int(binary.BigEndian.Uint16(rg.data))
	}
	unknown("nat to a port from " + regs[n].kind)
	return 0
}

// addr reads a dnat target's address from its register.
func (regs registers) addr(n uint32, unknown func(string)) string {
	if rg := regs[n]; n != 0 && rg.kind == "immediate" && (len(rg.data) == 4 || len(rg.data) == 16) {
		return net.IP(rg.data).String()
	}
	unknown("dnat to an address from " + regs[n].kind)
	return "?"
}

// setVerdict takes e's verdict for the rule; a kind it does not know is
// read as accept, the verdict that can only widen what the rule admits,
// and reported as not understood.
func (r *fwRule) setVerdict(e *expr.Verdict) bool {
	switch e.Kind {
	case expr.VerdictAccept:
		r.verdict = "accept"
	case expr.VerdictDrop:
		r.verdict = "drop"
	case expr.VerdictReturn:
		r.verdict = "return"
	case expr.VerdictJump:
		r.verdict, r.target = "jump", e.Chain
	case expr.VerdictGoto:
		r.verdict, r.target = "goto", e.Chain
	default:
		r.verdict = "accept"
		return false
	}
	return true
}
