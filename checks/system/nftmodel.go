package system

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/checks/facts"
)

// The file parser and the kernel reader both reduce a ruleset to fwChain
// and fwRule, and one evaluator computes what the input path accepts, so an
// image and the host booted from it are judged by the same semantics.

const (
	// maxJumpDepth bounds jump and goto nesting; the kernel refuses loops,
	// a file or a hostile netlink peer may not.
	maxJumpDepth = 16
	// maxRuleVisits bounds the evaluation work over all chains.
	maxRuleVisits = 200000
	// maxRules bounds the rules read, from files and from the kernel.
	maxRules = 20000
	// maxSetElements bounds the elements of all sets together.
	maxSetElements = 1 << 17
)

// Protocols a rule can admit; only TCP and UDP have ports to listen on.
const (
	protoTCP = 1 << iota
	protoUDP
	protoAny = protoTCP | protoUDP
)

var protoNames = []struct {
	bit  int
	name string
}{{protoTCP, "tcp"}, {protoUDP, "udp"}}

// fwRule is one rule reduced to what decides inbound TCP and UDP.
type fwRule struct {
	// ref names the rule for people: "inet filter input handle 4" or
	// "/etc/nftables.conf:12".
	ref  string
	text string
	// protos are the protocols the rule can match; 0 matches none.
	protos int
	// ports is nil when the rule does not look at the destination port.
	ports *portSet
	// verdict is accept, drop, jump, goto, return, or "" to continue.
	verdict string
	target  string
	// inert rules never see a new connection from another host (ct state
	// established, iif lo).
	inert bool
	// family, when set ("ip" or "ip6"), limits an inet rule to IPv4 or
	// IPv6 (meta nfproto).
	family string
	// set, when not empty, is the key of a named set the destination port
	// is looked up in (negated with setNeg); resolve folds it into ports.
	set     string
	setName string
	setNeg  bool
	// unknown lists conditions the model cannot evaluate.
	unknown []string
}

// restrictPorts narrows the ports the rule matches; two port conditions
// in one rule must both hold.
func (r *fwRule) restrictPorts(ports *portSet) {
	if r.ports == nil {
		cp := *ports
		r.ports = &cp
		return
	}
	r.ports.and(ports)
}

// fwChain is one chain; base chains carry their hook's policy.
type fwChain struct {
	family, table, name string
	input               bool
	policy              string
	rules               []fwRule
}

func (c *fwChain) ref() string { return c.family + " " + c.table + " " + c.name }

// fwRuleset is a ruleset keyed by family, table and chain name.
type fwRuleset struct {
	chains map[string]*fwChain
	order  []*fwChain
	sets   map[string]*portSet
	rules  int
}

// set returns the named set, creating it.
func (rs *fwRuleset) set(family, table, name string) (*portSet, error) {
	if rs.sets == nil {
		rs.sets = map[string]*portSet{}
	}
	k := chainKey(family, table, name)
	if s, ok := rs.sets[k]; ok {
		return s, nil
	}
	if len(rs.sets) >= maxTableEntries {
		return nil, fmt.Errorf("more than %d sets", maxTableEntries)
	}
	s := &portSet{}
	rs.sets[k] = s
	return s, nil
}

// resolve folds set lookups into the rules' ports; sets may be declared
// after the rules that use them.
func (rs *fwRuleset) resolve() {
	for _, c := range rs.order {
		for i := range c.rules {
			r := &c.rules[i]
			if r.set == "" {
				continue
			}
			s, ok := rs.sets[r.set]
			if !ok {
				r.unknown = append(r.unknown, "dport @"+r.setName+" (no such set)")
				r.set = ""
				continue
			}
			ports := *s
			if r.setNeg {
				var all portSet
				all.fill()
				all.andNot(&ports)
				ports = all
			}
			r.restrictPorts(&ports)
			r.set = ""
		}
	}
}

// verdict resolves sets and evaluates the input path.
func (rs *fwRuleset) verdict() (fwVerdict, error) {
	rs.resolve()
	return rs.evaluate()
}

func chainKey(family, table, name string) string {
	return family + "\x00" + table + "\x00" + name
}

// chain returns the named chain, creating it; nftables merges repeated
// declarations of one chain, and so does this.
func (rs *fwRuleset) chain(family, table, name string) (*fwChain, error) {
	if rs.chains == nil {
		rs.chains = map[string]*fwChain{}
	}
	k := chainKey(family, table, name)
	if c, ok := rs.chains[k]; ok {
		return c, nil
	}
	if len(rs.order) >= maxTableEntries {
		return nil, fmt.Errorf("more than %d chains", maxTableEntries)
	}
	c := &fwChain{family: family, table: table, name: name, policy: "accept"}
	rs.chains[k] = c
	rs.order = append(rs.order, c)
	return c, nil
}

func (rs *fwRuleset) addRule(c *fwChain, r fwRule) error {
	if rs.rules++; rs.rules > maxRules {
		return fmt.Errorf("more than %d rules", maxRules)
	}
	c.rules = append(c.rules, r)
	return nil
}

// admission records which rule first admitted which ports.
type admission struct {
	family string
	proto  int
	ports  portSet
	ref    string
}

// evaluator walks chains for one protocol at a time.
type evaluator struct {
	rs      *fwRuleset
	family  string
	visits  int
	admits  []admission
	unknown map[string]facts.FirewallRule
}

// chainResult splits the ports that entered a chain by outcome: accepted by
// a rule, or returned to the caller (for a base chain: left to the policy).
type chainResult struct {
	accepted, returned portSet
}

func (e *evaluator) eval(c *fwChain, proto int, in *portSet, depth int) (chainResult, error) {
	var res chainResult
	if depth > maxJumpDepth {
		return res, fmt.Errorf("jumps from %s nested deeper than %d (a loop?)", c.ref(), maxJumpDepth)
	}
	undecided := *in
	for i := range c.rules {
		r := &c.rules[i]
		if e.visits++; e.visits > maxRuleVisits {
			return res, fmt.Errorf("evaluating the ruleset took more than %d rule visits", maxRuleVisits)
		}
		if r.inert || r.protos&proto == 0 || (r.family != "" && r.family != e.family) || undecided.empty() {
			continue
		}
		m := undecided
		if r.ports != nil {
			m.and(r.ports)
		}
		if m.empty() {
			continue
		}
		// A rule with a condition the model cannot evaluate matches some
		// packets and not others: what it accepts counts as admitted, and
		// what it would drop is still treated as passing on.
		sure := len(r.unknown) == 0
		if !sure {
			e.noteUnknown(r)
		}
		switch r.verdict {
		case "accept":
			if !sure && r.ports == nil {
				// It may accept any port from some sources: recorded in
				// unknown, never folded into the port list.
				continue
			}
			e.admit(proto, &m, r.ref+": "+r.text)
			res.accepted.or(&m)
			if sure {
				undecided.andNot(&m)
			}
		case "drop", "reject":
			if sure {
				undecided.andNot(&m)
			}
		case "return":
			if sure {
				res.returned.or(&m)
				undecided.andNot(&m)
			}
		case "jump", "goto":
			t, ok := e.rs.chains[chainKey(c.family, c.table, r.target)]
			if !ok {
				return res, fmt.Errorf("%s jumps to %s, which does not exist", r.ref, r.target)
			}
			sub, err := e.eval(t, proto, &m, depth+1)
			if err != nil {
				return res, err
			}
			res.accepted.or(&sub.accepted)
			if !sure {
				continue
			}
			undecided.andNot(&m)
			if r.verdict == "jump" {
				undecided.or(&sub.returned)
			} else {
				res.returned.or(&sub.returned)
			}
		}
	}
	res.returned.or(&undecided)
	return res, nil
}

func (e *evaluator) admit(proto int, ports *portSet, ref string) {
	for i := range e.admits {
		if a := &e.admits[i]; a.family == e.family && a.proto == proto && a.ref == ref {
			a.ports.or(ports)
			return
		}
	}
	e.admits = append(e.admits, admission{family: e.family, proto: proto, ports: *ports, ref: ref})
}

func (e *evaluator) noteUnknown(r *fwRule) {
	if e.unknown == nil {
		e.unknown = map[string]facts.FirewallRule{}
	}
	if _, ok := e.unknown[r.ref]; ok {
		return
	}
	e.unknown[r.ref] = facts.FirewallRule{
		Rule:      r.ref + ": " + r.text,
		Reason:    "cannot evaluate " + strings.Join(r.unknown, ", "),
		MayAccept: r.verdict == "accept" && r.ports == nil || r.verdict == "jump" || r.verdict == "goto",
	}
}

// fwVerdict is what a ruleset does with new inbound connections.
type fwVerdict struct {
	hasInput bool
	// policy is "accept" when some port reaches an accepting policy, and
	// otherwise the strictest policy of the input chains (drop when rules
	// leave no port to accepting policies).
	policy  string
	ports   []int
	admits  []facts.FirewallAdmit
	unknown []facts.FirewallRule
}

// evaluate computes, for IPv4 and IPv6 and for TCP and UDP, the ports that
// pass every input base chain: a packet must be accepted by each base chain
// on the hook, and a drop in any of them is final. A family with no input
// chain at all is not judged (the host may not route it).
func (rs *fwRuleset) evaluate() (fwVerdict, error) {
	v := fwVerdict{policy: "accept"}
	e := &evaluator{rs: rs}
	var explicit portSet
	strictest, byPolicy := "accept", false
	for _, fam := range []string{"ip", "ip6"} {
		var chains []*fwChain
		for _, c := range rs.order {
			if c.input && (c.family == fam || c.family == "inet") {
				chains = append(chains, c)
			}
		}
		if len(chains) == 0 {
			continue
		}
		v.hasInput = true
		e.family = fam
		for _, p := range protoNames {
			var passed, ruled portSet
			passed.fill()
			for _, c := range chains {
				if policyRank(c.policy) > policyRank(strictest) {
					strictest = c.policy
				}
				var all portSet
				all.fill()
				res, err := e.eval(c, p.bit, &all, 0)
				if err != nil {
					return v, err
				}
				through := res.accepted
				if c.policy == "accept" {
					through.or(&res.returned)
				}
				passed.and(&through)
				ruled.or(&res.accepted)
			}
			ruled.and(&passed)
			explicit.or(&ruled)
			policyOnly := passed
			policyOnly.andNot(&ruled)
			if !policyOnly.empty() {
				byPolicy = true
				e.admit(p.bit, &policyOnly, "policy accept of "+chainList(chains))
			}
			e.keep(p.bit, &passed)
		}
	}
	switch {
	case byPolicy || !v.hasInput:
	case strictest == "accept":
		// Accepting policies that no packet reaches: a catch-all drop
		// rule (the iptables habit) is the effective policy.
		v.policy = "drop"
	default:
		v.policy = strictest
	}
	v.ports = explicit.list()
	v.admits = e.facts()
	for _, u := range e.unknown {
		v.unknown = append(v.unknown, u)
	}
	slices.SortFunc(v.unknown, func(a, b facts.FirewallRule) int { return strings.Compare(a.Rule, b.Rule) })
	return v, nil
}

// keep trims the admissions of proto to the ports that got through every
// base chain; an accept in one base chain is not the last word.
func (e *evaluator) keep(proto int, passed *portSet) {
	for i := range e.admits {
		if e.admits[i].family == e.family && e.admits[i].proto == proto {
			e.admits[i].ports.and(passed)
		}
	}
}

func chainList(chains []*fwChain) string {
	var names []string
	for _, c := range chains {
		if c.policy == "accept" {
			names = append(names, c.ref())
		}
	}
	return strings.Join(names, ", ")
}

// facts renders the admissions as port ranges, the first rule that admits
// a port winning.
func (e *evaluator) facts() []facts.FirewallAdmit {
	out := []facts.FirewallAdmit{}
	for _, p := range protoNames {
		var seen portSet
		for _, a := range e.admits {
			if a.proto != p.bit {
				continue
			}
			ports := a.ports
			ports.andNot(&seen)
			seen.or(&a.ports)
			for _, r := range ports.ranges() {
				out = append(out, facts.FirewallAdmit{Proto: p.name, From: r[0], To: r[1], Rule: a.ref})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b facts.FirewallAdmit) int {
		if a.Proto != b.Proto {
			return strings.Compare(a.Proto, b.Proto)
		}
		return a.From - b.From
	})
	return out
}

func (s *portSet) empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

func (s *portSet) fill() {
	for i := range s {
		s[i] = ^uint64(0)
	}
}

func (s *portSet) and(o *portSet) {
	for i := range s {
		s[i] &= o[i]
	}
}

func (s *portSet) andNot(o *portSet) {
	for i := range s {
		s[i] &^= o[i]
	}
}

func (s *portSet) or(o *portSet) {
	for i := range s {
		s[i] |= o[i]
	}
}

func (s *portSet) has(p int) bool { return s[p/64]&(1<<(p%64)) != 0 }

// ranges returns the set as inclusive [from, to] runs.
func (s *portSet) ranges() [][2]int {
	var out [][2]int
	for p := 0; p < 65536; p++ {
		if !s.has(p) {
			continue
		}
		q := p
		for q+1 < 65536 && s.has(q+1) {
			q++
		}
		out = append(out, [2]int{p, q})
		p = q
	}
	return out
}

// setBound is one element of an interval set as the kernel holds it: the
// first port of a run, or (end) the port one past its last.
type setBound struct {
	port int
	end  bool
}

// intervalPorts turns interval set bounds, in any order, into ports.
func intervalPorts(bounds []setBound) portSet {
	var ps portSet
	slices.SortFunc(bounds, func(a, b setBound) int {
		if a.port != b.port {
			return a.port - b.port
		}
		// An end and a start at one port: the end closes the run before.
		switch {
		case a.end == b.end:
			return 0
		case a.end:
			return -1
		}
		return 1
	})
	open := -1
	for _, b := range bounds {
		switch {
		case !b.end && open < 0:
			open = b.port
		case b.end && open >= 0:
			ps.add(open, b.port-1)
			open = -1
		}
	}
	if open >= 0 {
		ps.add(open, 65535)
	}
	return ps
}
