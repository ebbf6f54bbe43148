package network

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
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
	// maxTableEntries bounds the tables, sets and chains of one ruleset.
	maxTableEntries = 4096
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
	// "/etc/nftables.conf:12"; at is that file and line (zero from the
	// kernel), where a finding about what the rule admits points.
	ref  string
	at   collect.FileLine
	text string
	// protos are the protocols the rule can match; 0 matches none.
	protos int
	// ports is nil when the rule does not look at the destination port.
	ports *portList
	// verdict is accept, drop, jump, goto, return, or "" to continue.
	verdict string
	target  string
	// inert rules never see a new connection from another host (iif lo,
	// a ct state map that passes no state a new connection is in).
	inert bool
	// toLocal rules match only packets to an address of the host (xtables
	// addrtype --dst-type LOCAL): every new connection to the host, no
	// forwarded one and no reply.
	toLocal bool
	// ct is the conntrack states the rule matches (the kernel's bits), 0
	// when it looks at none: which state a new connection is in depends
	// on whether conntrack has run (see ctMatches).
	ct uint32
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
	// nat is where a redirect or dnat rule (verdict "nat") sends the
	// connections it matches.
	nat *natTarget
}

// portList is a rule's ports as sorted runs: most rules name a port or
// two, and a bitmap per rule would cost more than the whole ruleset.
type portList struct {
	runs [][2]int
}

// restrictPorts narrows the ports the rule matches; two port conditions
// in one rule must both hold.
func (r *fwRule) restrictPorts(ports *portSet) {
	if r.ports != nil {
		var both portSet
		r.ports.into(&both)
		both.and(ports)
		ports = &both
	}
	r.ports = &portList{runs: ports.ranges()}
}

// into sets the list's ports in s, which must be empty.
func (l *portList) into(s *portSet) {
	for _, run := range l.runs {
		s.setRange(run[0], run[1])
	}
}

// fwChain is one chain; base chains carry their type ("filter", "nat"),
// hook and priority, and their hook's policy. policyAt is the line of a
// file that sets the policy, or that declares the hook while leaving the
// policy at accept; zero from the kernel.
type fwChain struct {
	family, table, name string
	kind, hook          string
	prio                int
	policy              string
	policyAt            collect.FileLine
	rules               []fwRule
}

func (c *fwChain) ref() string { return c.family + " " + c.table + " " + c.name }

// sees says whether the chain sees packets of the nftables family fam
// ("ip" or "ip6"): its own, or both from an inet table.
func (c *fwChain) sees(fam string) bool { return c.family == fam || c.family == "inet" }

// Conntrack states as the kernel's ct state bits.
const (
	ctInvalid   = 1 << 0
	ctNew       = 1 << 3
	ctUntracked = 1 << 6
	ctAllStates = ctInvalid | 1<<1 | 1<<2 | ctNew | ctUntracked
)

// ctEstablished is the state of a reply.
const ctEstablished = 1 << 1

// conntrackPriority is where conntrack runs on the prerouting hook: a
// chain below it sees a packet with no connection, which ct state calls
// invalid; from it up, a new connection's first packet is new, and a
// reply established.
const conntrackPriority = -200

// ctMatches says whether a rule matching the ct states mask sees a packet
// in state (ctInvalid, ctNew or ctEstablished). A new connection's packet
// is taken to match untracked too, which can only widen what is admitted.
func ctMatches(mask, state uint32) bool {
	if state == ctNew {
		return mask&(ctNew|ctUntracked) != 0
	}
	return mask&state != 0
}

// fwRuleset is a ruleset keyed by family, table and chain name.
type fwRuleset struct {
	chains map[string]*fwChain
	order  []*fwChain
	sets   map[string]*portSet
	rules  int
	// dormant holds the tables (chainKey of family and table) whose
	// flags make them dormant: their chains see no packet.
	dormant map[string]bool
}

// setDormant marks a table dormant.
func (rs *fwRuleset) setDormant(family, table string) {
	if rs.dormant == nil {
		rs.dormant = map[string]bool{}
	}
	rs.dormant[family+"\x00"+table] = true
}

// active says whether c is a base chain of a table that is not dormant.
func (rs *fwRuleset) active(c *fwChain) bool {
	return c.hook != "" && !rs.dormant[c.family+"\x00"+c.table]
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

// evaluator walks chains for one family and protocol at a time.
type evaluator struct {
	rs     *fwRuleset
	family string
	// state is the conntrack state of the packet the chain being
	// evaluated sees (ctInvalid in a base chain below conntrack, and in
	// the chains it jumps to).
	state uint32
	// quiet is set while a path other than the input path is evaluated:
	// what it accepts is no admission of the input path.
	quiet   bool
	visits  int
	unknown map[string]facts.FirewallRule
	// owner[family][proto][port] is 1 + the index in refs (and places) of
	// the first rule (or policy) that admitted the port; 0 when none did.
	owner  [2][2]*[65536]uint16
	refs   []string
	places []collect.FileLine
	refIdx map[string]uint16
	bufs   []*portSet
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
		m := e.scratch(depth)
		if !e.reach(r, proto, &undecided, m) {
			continue
		}
		// A rule with a condition the model cannot evaluate matches some
		// packets and not others: what it accepts counts as admitted, and
		// what it would drop is still treated as passing on.
		sure := e.sure(r)
		switch r.verdict {
		case "accept":
			if !sure && r.ports == nil {
				// It may accept any port from some sources: recorded in
				// unknown, never folded into the port list.
				continue
			}
			if !e.quiet {
				e.admit(proto, m, r.ref+": "+r.text, r.at)
			}
			res.accepted.or(m)
			if sure {
				undecided.andNot(m)
			}
		case "drop", "reject":
			if sure {
				undecided.andNot(m)
			}
		case "return":
			// Some packets may go back to the caller, which may accept them.
			res.returned.or(m)
			if sure {
				undecided.andNot(m)
			}
		case "jump", "goto":
			sub, err := e.follow(c, r, proto, m, depth)
			if err != nil {
				return res, err
			}
			res.accepted.or(&sub.accepted)
			if r.verdict == "goto" {
				// What the target lets through goes back to this chain's
				// caller, whether or not every packet took the goto.
				res.returned.or(&sub.returned)
			}
			if !sure {
				continue
			}
			undecided.andNot(m)
			if r.verdict == "jump" {
				undecided.or(&sub.returned)
			}
		}
	}
	res.returned.or(&undecided)
	return res, nil
}

// reach sets m to the ports of left that r can match, in the family,
// protocol and conntrack state being evaluated, and says whether there
// are any.
func (e *evaluator) reach(r *fwRule, proto int, left, m *portSet) bool {
	if r.inert || r.protos&proto == 0 || (r.family != "" && r.family != e.family) || left.empty() ||
		(r.ct != 0 && !ctMatches(r.ct, e.state)) || (r.toLocal && e.quiet) {
		return false
	}
	if r.ports == nil {
		*m = *left
	} else {
		*m = portSet{}
		r.ports.into(m)
		m.and(left)
	}
	return !m.empty()
}

// sure says whether the model evaluates every condition of r, noting the
// rule as unmodeled when it does not.
func (e *evaluator) sure(r *fwRule) bool {
	if len(r.unknown) == 0 {
		return true
	}
	e.noteUnknown(r)
	return false
}

// follow evaluates the chain that r, in c, jumps or goes to, for the
// ports m that reached r.
func (e *evaluator) follow(c *fwChain, r *fwRule, proto int, m *portSet, depth int) (chainResult, error) {
	t, ok := e.rs.chains[chainKey(c.family, c.table, r.target)]
	if !ok {
		return chainResult{}, fmt.Errorf("%s jumps to %s, which does not exist", r.ref, r.target)
	}
	return e.eval(t, proto, m, depth+1)
}

// scratch is the matched-ports buffer of one jump depth; a deeper chain
// has its own, so a caller's survives the call.
func (e *evaluator) scratch(depth int) *portSet {
	for len(e.bufs) <= depth {
		e.bufs = append(e.bufs, new(portSet))
	}
	return e.bufs[depth]
}

func (e *evaluator) noteUnknown(r *fwRule) {
	if e.unknown == nil {
		e.unknown = map[string]facts.FirewallRule{}
	}
	if _, ok := e.unknown[r.ref]; ok {
		return
	}
	e.unknown[r.ref] = facts.FirewallRule{
		Rule:   r.ref + ": " + r.text,
		Reason: "cannot evaluate " + strings.Join(r.unknown, ", "),
		// A jump or goto under an unknown condition is followed, and what
		// its target accepts is counted: only a portless accept escapes.
		MayAccept: r.verdict == "accept" && r.ports == nil,
	}
}

// fwVerdict is what a ruleset does with new inbound connections.
type fwVerdict struct {
	hasInput bool
	// policy is "accept" when some port reaches an accepting policy, and
	// otherwise the strictest policy of the input chains (drop when rules
	// leave no port to accepting policies). It, ports and admits join the
	// families that have an input chain; families holds each alone.
	policy   string
	ports    []int
	admits   []facts.FirewallAdmit
	unknown  []facts.FirewallRule
	families [2]familyVerdict
}

// familyVerdict is the input path of one address family.
type familyVerdict struct {
	// name is "ipv4" or "ipv6"; filtered says some filter chain on the
	// input path (prerouting or input) sees it.
	name      string
	filtered  bool
	policy    string
	policyAt  collect.FileLine
	ports     []int
	admits    []facts.FirewallAdmit
	chains    []string
	published []facts.FirewallPublished
}

// nftFamilies are the nftables families of the two address families, in
// the order of fwVerdict.families and evaluator.owner.
var nftFamilies = [2]struct{ nft, name string }{{"ip", "ipv4"}, {"ip6", "ipv6"}}

// familyChains are the active base chains that see one family, by the
// part of the path they judge.
type familyChains struct {
	// before are prerouting filter chains below dstnat, after the input
	// path behind NAT (prerouting filter chains from dstnat up, and the
	// input hook's), forward the path of a connection NAT sends to
	// another address (those prerouting chains, and the forward hook's).
	before, after, forward []*fwChain
	// nat are the prerouting nat chains, in the order the kernel runs them.
	nat []*fwChain
}

func (rs *fwRuleset) familyChains(fam string) familyChains {
	var fc familyChains
	for _, c := range rs.order {
		if !rs.active(c) || !c.sees(fam) {
			continue
		}
		switch {
		case c.kind == "filter" && c.hook == "prerouting" && c.prio < dstnatPriority:
			fc.before = append(fc.before, c)
		case c.kind == "filter" && c.hook == "prerouting":
			fc.after = append(fc.after, c)
			fc.forward = append(fc.forward, c)
		case c.kind == "filter" && c.hook == "input":
			fc.after = append(fc.after, c)
		case c.kind == "filter" && c.hook == "forward":
			fc.forward = append(fc.forward, c)
		case c.kind == "nat" && c.hook == "prerouting":
			fc.nat = append(fc.nat, c)
		}
	}
	// The kernel runs hooks by priority, and of two at one priority the
	// one registered later first (it is inserted before its equals): a
	// Docker DNAT chain made after a table ip nat of the same priority
	// decides before it.
	slices.Reverse(fc.nat)
	slices.SortStableFunc(fc.nat, func(a, b *fwChain) int { return a.prio - b.prio })
	return fc
}

// evaluate computes, for IPv4 and IPv6 and for TCP and UDP, the ports that
// pass every base chain on the input path: the prerouting filter chains
// that see the port a client asked for, then destination NAT, then the
// prerouting and input filter chains that see the port NAT sent it to. A
// packet must be accepted by each base chain on a hook, and a drop in any
// of them is final; a dormant table's chains see nothing. A family with no
// filter chain on the path is unfiltered: the kernel accepts all of it. A
// port NAT moves is not admitted as itself: it is published, to this host
// (judged by the input path) or to another address (by the forward path).
func (rs *fwRuleset) evaluate() (fwVerdict, error) {
	v := fwVerdict{policy: "accept"}
	e := &evaluator{rs: rs}
	var explicit portSet
	strictest, byPolicy := "accept", false
	for i, fam := range nftFamilies {
		fv := &v.families[i]
		fv.name, fv.policy, fv.ports = fam.name, "accept", []int{}
		fc := rs.familyChains(fam.nft)
		chains := append(slices.Clone(fc.before), fc.after...)
		for _, c := range chains {
			fv.chains = append(fv.chains, c.ref())
		}
		if len(chains) == 0 && len(fc.nat) == 0 {
			continue
		}
		e.family = fam.nft
		if len(chains) > 0 {
			v.hasInput, fv.filtered = true, true
		}
		var famExplicit portSet
		famStrictest, famByPolicy := "accept", false
		for _, c := range chains {
			if policyRank(c.policy) > policyRank(famStrictest) {
				famStrictest = c.policy
			}
		}
		for _, p := range protoNames {
			before, _, err := e.pass(fc.before, p.bit, ctNew)
			if err != nil {
				return v, err
			}
			after, afterRuled, err := e.pass(fc.after, p.bit, ctNew)
			if err != nil {
				return v, err
			}
			moves, untouched, err := e.translate(fc.nat, p.bit)
			if err != nil {
				return v, err
			}
			var published []facts.FirewallPublished
			if len(moves) > 0 {
				forward, replies, err := e.forwardPath(fc, p.bit)
				if err != nil {
					return v, err
				}
				published = e.publish(moves, p.name, &before, &after, &forward, replies)
			}
			fv.published = append(fv.published, published...)
			if !fv.filtered {
				// Nothing filters the family: NAT alone moves its ports.
				continue
			}
			passed := before
			passed.and(&untouched)
			passed.and(&after)
			var ruled portSet
			ruled.or(&afterRuled)
			ruled.and(&passed)
			famExplicit.or(&ruled)
			policyOnly := passed
			policyOnly.andNot(&ruled)
			if !policyOnly.empty() {
				famByPolicy = true
				e.admit(p.bit, &policyOnly, "policy accept of "+chainList(chains), policyPlace(chains, "accept"))
			}
			e.keep(p.bit, &passed)
		}
		if !fv.filtered {
			fv.policy = "accept"
			continue
		}
		fv.policy = effectivePolicy(famByPolicy, famStrictest)
		fv.policyAt = policyPlace(chains, fv.policy)
		fv.ports = famExplicit.list()
		fv.admits = e.familyFacts(i)
		explicit.or(&famExplicit)
		byPolicy = byPolicy || famByPolicy
		if policyRank(famStrictest) > policyRank(strictest) {
			strictest = famStrictest
		}
	}
	if v.hasInput {
		v.policy = effectivePolicy(byPolicy, strictest)
	}
	v.ports = explicit.list()
	v.admits = e.facts()
	for _, u := range e.unknown {
		v.unknown = append(v.unknown, u)
	}
	slices.SortFunc(v.unknown, func(a, b facts.FirewallRule) int { return strings.Compare(a.Rule, b.Rule) })
	return v, nil
}

// pass is what gets through every chain of chains, a base chain's policy
// taking what its rules leave, and what their rules accepted; every port
// passes an empty list.
func (e *evaluator) pass(chains []*fwChain, proto int, state uint32) (passed, ruled portSet, err error) {
	return e.passFrom(chains, proto, state, nil)
}

// passFrom is pass for the packets to the ports in from (nil: every port).
func (e *evaluator) passFrom(chains []*fwChain, proto int, state uint32, from *portSet) (passed, ruled portSet, err error) {
	if from == nil {
		passed.fill()
	} else {
		passed = *from
	}
	for _, c := range chains {
		all := passed
		e.state = state
		if c.hook == "prerouting" && c.prio < conntrackPriority {
			e.state = ctInvalid
		}
		res, err := e.eval(c, proto, &all, 0)
		if err != nil {
			return passed, ruled, err
		}
		through := res.accepted
		if c.policy == "accept" {
			through.or(&res.returned)
		}
		passed.and(&through)
		ruled.or(&res.accepted)
	}
	return passed, ruled, nil
}

// effectivePolicy is "accept" when some port reached an accepting policy.
// Accepting policies that no packet reaches leave the catch-all drop rule
// (the iptables habit) as the effective policy.
func effectivePolicy(byPolicy bool, strictest string) string {
	switch {
	case byPolicy:
		return "accept"
	case strictest == "accept":
		return "drop"
	}
	return strictest
}

// policyPlace is where the first of chains whose policy is policy sets it;
// zero when none is placed, or rules decided the policy (a catch-all drop
// before accepting policies).
func policyPlace(chains []*fwChain, policy string) collect.FileLine {
	for _, c := range chains {
		if c.policy == policy && c.policyAt.Line > 0 {
			return c.policyAt
		}
	}
	return collect.FileLine{}
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
