package network

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
)

// Destination NAT: what a prerouting nat chain does to a new connection
// before the filter chains behind it see the port, read from a file
// (redirect, dnat) and evaluated for the facts' published ports.

// natTarget is where a nat rule sends a connection: to this host (a
// redirect) or to addr, on port, or on the port it came to when port is 0.
type natTarget struct {
	addr string
	port int
}

// words is the target as nft prints it after "redirect" or "dnat".
func (t *natTarget) words() string {
	switch {
	case t.addr != "" && t.port != 0 && strings.Contains(t.addr, ":"):
		return fmt.Sprintf(" to [%s]:%d", t.addr, t.port)
	case t.addr != "" && t.port != 0:
		return fmt.Sprintf(" to %s:%d", t.addr, t.port)
	case t.addr != "":
		return " to " + t.addr
	case t.port != 0:
		return fmt.Sprintf(" to :%d", t.port)
	}
	return ""
}

// ephemeralPorts are Linux's default ip_local_port_range: the ports a
// client's connection comes from, and its replies go to.
var ephemeralPorts = [2]int{32768, 60999}

// forwardPath is what the forward path lets through to another address
// (the prerouting chains behind NAT and the forward hook's), and whether
// its replies come back: they cross every prerouting chain and the
// forward hook again, established, to the client's ephemeral port, and a
// reply some chain drops ends the connection as surely as a dropped SYN.
// replies is true when some ephemeral port gets back.
func (e *evaluator) forwardPath(fc familyChains, proto int) (forward portSet, replies bool, err error) {
	e.quiet = true
	defer func() { e.quiet = false }()
	if forward, _, err = e.pass(fc.forward, proto, ctNew); err != nil {
		return forward, false, err
	}
	var ephemeral portSet
	ephemeral.setRange(ephemeralPorts[0], ephemeralPorts[1])
	back, _, err := e.passFrom(append(slices.Clone(fc.before), fc.forward...), proto, ctEstablished, &ephemeral)
	if err != nil {
		return forward, false, err
	}
	return forward, !back.empty(), nil
}

// natMove is a run of ports a nat rule sends elsewhere. sure is false when
// the rule has conditions the model cannot evaluate: then some connections
// to the ports are moved and others reach them as they are.
type natMove struct {
	ports portSet
	rule  *fwRule
	sure  bool
}

// translate walks the nat chains in the kernel's order: the first rule
// that matches a port decides, and a port no rule sure of its match moved
// is untouched. A nat chain's drop closes the port; its accept leaves the
// port to the next chain.
func (e *evaluator) translate(chains []*fwChain, proto int) ([]natMove, portSet, error) {
	var untouched portSet
	untouched.fill()
	// The nat chains run behind conntrack, on a new connection's packet.
	e.state = ctNew
	var moves []natMove
	for _, c := range chains {
		left := untouched
		if err := e.natChain(c, proto, &left, &untouched, &moves, false, 0); err != nil {
			return nil, untouched, err
		}
	}
	return moves, untouched, nil
}

// natChain walks one nat chain for the ports in left (those still
// undecided in this chain), taking what it moves or drops out of untouched.
// partial is set in a chain reached by a jump whose condition the model
// cannot evaluate: what it moves is moved for some connections only.
func (e *evaluator) natChain(c *fwChain, proto int, left, untouched *portSet, moves *[]natMove, partial bool, depth int) error {
	if depth > maxJumpDepth {
		return fmt.Errorf("jumps from %s nested deeper than %d (a loop?)", c.ref(), maxJumpDepth)
	}
	for i := range c.rules {
		r := &c.rules[i]
		if e.visits++; e.visits > maxRuleVisits {
			return fmt.Errorf("evaluating the ruleset took more than %d rule visits", maxRuleVisits)
		}
		var m portSet
		if !e.reach(r, proto, left, &m) {
			continue
		}
		sure := e.sure(r) && !partial
		switch r.verdict {
		case "nat":
			*moves = append(*moves, natMove{ports: m, rule: r, sure: sure})
			if sure {
				untouched.andNot(&m)
			}
		case "drop":
			if sure {
				untouched.andNot(&m)
			}
		case "jump", "goto":
			t, ok := e.rs.chains[chainKey(c.family, c.table, r.target)]
			if !ok {
				return fmt.Errorf("%s jumps to %s, which does not exist", r.ref, r.target)
			}
			sub := m
			if err := e.natChain(t, proto, &sub, untouched, moves, !sure, depth+1); err != nil {
				return err
			}
			if !sure {
				continue
			}
			// What the target decided leaves this chain; a goto ends it.
			m.andNot(&sub)
			if r.verdict == "goto" {
				m.or(&sub)
			}
		case "accept", "return":
		default:
			continue
		}
		if sure {
			left.andNot(&m)
		}
	}
	return nil
}

// publish turns the nat moves of one protocol into facts: each run of
// ports with the same target, and whether the path behind NAT admits it
// (the input path for this host, the forward path for another address).
func (e *evaluator) publish(moves []natMove, proto string, before, after, forward *portSet, replies bool) []facts.FirewallPublished {
	var out []facts.FirewallPublished
	var none portSet
	for _, mv := range moves {
		path := after
		if mv.rule.nat.addr != "" {
			path = forward
			if !replies {
				path = &none
			}
		}
		// The ports the path lets in: before NAT as asked, behind it as
		// moved (one port for all, or each its own).
		var yes portSet = mv.ports
		yes.and(before)
		if t := mv.rule.nat.port; t != 0 {
			if !path.has(t) {
				yes = portSet{}
			}
		} else {
			yes.and(path)
		}
		var no portSet = mv.ports
		no.andNot(&yes)
		var runs []facts.FirewallPublished
		for ok, set := range map[bool]*portSet{true: &yes, false: &no} {
			for _, run := range set.ranges() {
				runs = append(runs, facts.FirewallPublished{
					Proto: proto, From: run[0], To: run[1], ToAddress: mv.rule.nat.addr, ToPort: mv.rule.nat.port,
					Admitted: ok, Partial: !mv.sure,
					Rule: mv.rule.ref + ": " + mv.rule.text, File: mv.rule.at.File, Line: mv.rule.at.Line,
				})
			}
		}
		slices.SortFunc(runs, func(a, b facts.FirewallPublished) int { return a.From - b.From })
		out = append(out, runs...)
	}
	return out
}

// publishes says whether NAT moves some port of some family.
func (v fwVerdict) publishes() bool {
	return len(v.families[0].published)+len(v.families[1].published) > 0
}

// dstnatPriority is where the kernel's destination NAT runs on the
// prerouting hook: a filter chain below it sees the port a client asked
// for, one at or above it the port NAT sent the connection to.
const dstnatPriority = -100

// namedPriorities are the priorities nft names for the ip, ip6 and inet
// families.
var namedPriorities = map[string]int{"raw": -300, "mangle": -150, "dstnat": -100, "filter": 0, "security": 50, "srcnat": 100}

// nftPriority reads "filter", "-150" or "filter + 10" (nft's spellings);
// what it cannot read is the filter priority.
func nftPriority(words []string) int {
	if len(words) == 0 {
		return 0
	}
	base, ok := namedPriorities[words[0]]
	if !ok {
		n, err := strconv.Atoi(words[0])
		if err != nil {
			return 0
		}
		base = n
	}
	if len(words) >= 3 && (words[1] == "+" || words[1] == "-") {
		if n, err := strconv.Atoi(words[2]); err == nil {
			if words[1] == "-" {
				n = -n
			}
			base += n
		}
	}
	return base
}

// natStatement reads "redirect [to :PORT]" and "dnat [ip|ip6] to
// ADDR[:PORT]" at words[i]: a nat rule's verdict. A target it cannot read
// (a map, a range of addresses) is an unknown condition of the rule.
func natStatement(r *fwRule, words []string, i int) (int, bool) {
	w := words[i]
	if w != "redirect" && w != "dnat" {
		return i, false
	}
	r.verdict = "nat"
	r.nat = &natTarget{}
	j := i + 1
	if w == "dnat" && (at(words, j) == "ip" || at(words, j) == "ip6") {
		// In an inet table, "dnat ip to" moves IPv4 alone.
		r.family = words[j]
		j++
	}
	if at(words, j) == "to" {
		j++
	}
	target := at(words, j)
	if w == "redirect" {
		if target != "" && target != "random" && target != "persistent" && target != "fully-random" {
			r.nat.port = natPort(r, strings.TrimPrefix(target, ":"))
		}
		return len(words), true
	}
	addr, port := target, ""
	switch {
	case strings.HasPrefix(target, "["):
		a, rest, _ := strings.Cut(target[1:], "]")
		addr, port = a, strings.TrimPrefix(rest, ":")
	case strings.Count(target, ":") == 1:
		addr, port, _ = strings.Cut(target, ":")
	}
	if addr == "" || strings.ContainsAny(addr, "{}@$-/") {
		r.unknown = append(r.unknown, "dnat to "+target)
		addr = "?"
	}
	r.nat.addr = addr
	if port != "" {
		r.nat.port = natPort(r, port)
	}
	return len(words), true
}

// natPort reads a nat target's port; a range of ports or a name it does
// not know is an unknown condition, and the port then stays as it came.
func natPort(r *fwRule, spec string) int {
	if n, ok := portNumber(spec); ok && n > 0 {
		return n
	}
	r.unknown = append(r.unknown, "nat to port "+spec)
	return 0
}
