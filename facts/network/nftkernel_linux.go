package network

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
)

// readKernelRuleset reads the nftables ruleset of a network namespace (the
// scanner's own when netns is empty) over netlink. iptables-nft keeps its
// tables there too, so this covers ufw and iptables alike.
func readKernelRuleset(netns string) (*fwRuleset, error) {
	var opts []nftables.ConnOption
	if netns != "" {
		ns, err := os.Open(netns)
		if err != nil {
			return nil, fmt.Errorf("opening the network namespace: %w", err)
		}
		defer ns.Close()
		opts = append(opts, nftables.WithNetNSFd(int(ns.Fd())))
	}
	conn, err := nftables.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("opening netlink: %w", err)
	}
	k := &kernelReader{conn: conn}
	if err := k.read(); err != nil {
		return nil, fmt.Errorf("reading the nftables ruleset: %w", err)
	}
	return &k.rs, nil
}

type kernelReader struct {
	conn     *nftables.Conn
	rs       fwRuleset
	elements int
	// setPorts and setProtos hold the sets of each table by name, as ports
	// (2-byte keys) or as protocol numbers (1-byte keys).
	setPorts  map[string]*portSet
	setProtos map[string]int
	// ctMaps holds verdict maps keyed by ct state: the states whose verdict
	// may let a packet on (accept, jump, goto), as a mask.
	ctMaps map[string]uint32
}

func familyName(f nftables.TableFamily) string {
	switch f {
	case nftables.TableFamilyINet:
		return "inet"
	case nftables.TableFamilyIPv4:
		return "ip"
	case nftables.TableFamilyIPv6:
		return "ip6"
	}
	return ""
}

// tableDormant is NFT_TABLE_F_DORMANT.
const tableDormant = 0x1

// tableFlags undoes the netlink library's reading of NFTA_TABLE_FLAGS in
// host order: the kernel sends it big-endian.
func tableFlags(t *nftables.Table) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], t.Flags)
	return binary.BigEndian.Uint32(b[:])
}

// hookName names the netfilter hooks of the ip, ip6 and inet families.
func hookName(h nftables.ChainHook) string {
	switch h {
	case *nftables.ChainHookPrerouting:
		return "prerouting"
	case *nftables.ChainHookInput:
		return "input"
	case *nftables.ChainHookForward:
		return "forward"
	case *nftables.ChainHookOutput:
		return "output"
	case *nftables.ChainHookPostrouting:
		return "postrouting"
	}
	return "hook " + strconv.Itoa(int(h))
}

func (k *kernelReader) read() error {
	tables, err := k.conn.ListTables()
	if err != nil {
		return err
	}
	if len(tables) > maxTableEntries {
		return fmt.Errorf("more than %d tables", maxTableEntries)
	}
	k.setPorts, k.setProtos, k.ctMaps = map[string]*portSet{}, map[string]int{}, map[string]uint32{}
	for _, t := range tables {
		if familyName(t.Family) == "" {
			continue
		}
		if tableFlags(t)&tableDormant != 0 {
			k.rs.setDormant(familyName(t.Family), t.Name)
		}
		if err := k.readSets(t); err != nil {
			return err
		}
	}
	chains, err := k.conn.ListChains()
	if err != nil {
		return err
	}
	for _, ch := range chains {
		fam := familyName(ch.Table.Family)
		if fam == "" {
			continue
		}
		c, err := k.rs.chain(fam, ch.Table.Name, ch.Name)
		if err != nil {
			return err
		}
		if ch.Hooknum != nil {
			c.kind, c.hook = string(ch.Type), hookName(*ch.Hooknum)
		}
		if ch.Priority != nil {
			c.prio = int(*ch.Priority)
		}
		if ch.Policy != nil && *ch.Policy == nftables.ChainPolicyDrop {
			c.policy = "drop"
		}
		rules, err := k.conn.GetRules(ch.Table, ch)
		if err != nil {
			return fmt.Errorf("listing the rules of %s: %w", c.ref(), err)
		}
		for _, r := range rules {
			if err := k.rs.addRule(c, k.rule(c, r)); err != nil {
				return err
			}
		}
	}
	return nil
}

// readSets reads every set of a table; interval sets come back as start
// keys and end keys one past the last member.
func (k *kernelReader) readSets(t *nftables.Table) error {
	sets, err := k.conn.GetSets(t)
	if err != nil {
		return fmt.Errorf("listing the sets of %s %s: %w", familyName(t.Family), t.Name, err)
	}
	for _, s := range sets {
		if s.Concatenation {
			continue
		}
		elems, err := k.conn.GetSetElements(s)
		if err != nil {
			return fmt.Errorf("listing set %s: %w", s.Name, err)
		}
		if k.elements += len(elems); k.elements > maxSetElements {
			return fmt.Errorf("more than %d set elements", maxSetElements)
		}
		key := chainKey(familyName(t.Family), t.Name, s.Name)
		if s.IsMap {
			if keyLen(elems) == 4 {
				k.ctMaps[key] = passingStates(elems)
			}
			continue
		}
		switch keyLen(elems) {
		case 1:
			k.setProtos[key] = protoBits(elems)
		case 2:
			k.setPorts[key] = portElements(elems, s.Interval)
		}
	}
	return nil
}

// keyLen is the common key length of the elements, 0 when they differ.
func keyLen(elems []nftables.SetElement) int {
	n := -1
	for _, e := range elems {
		if n >= 0 && len(e.Key) != n {
			return 0
		}
		n = len(e.Key)
	}
	return n
}

// passingStates ORs the keys (ct state masks) whose verdict is not drop or
// continue; a verdict that cannot be decoded counts as passing.
func passingStates(elems []nftables.SetElement) uint32 {
	var m uint32
	for _, e := range elems {
		switch code, ok := verdictCode(e.Val); {
		case ok && (code == 0 || code == -1):
		default:
			m |= binary.NativeEndian.Uint32(e.Key)
		}
	}
	return m
}

// verdictCode reads NFTA_VERDICT_CODE from a verdict's netlink attributes
// (length and type in host order, payload padded to four bytes, the code
// big-endian).
func verdictCode(b []byte) (int32, bool) {
	for len(b) >= 4 {
		n := int(binary.NativeEndian.Uint16(b))
		typ := binary.NativeEndian.Uint16(b[2:]) & 0x3fff
		if n < 4 || n > len(b) {
			return 0, false
		}
		if typ == 1 && n == 8 {
			return int32(binary.BigEndian.Uint32(b[4:8])), true
		}
		b = b[min((n+3)&^3, len(b)):]
	}
	return 0, false
}

func protoBits(elems []nftables.SetElement) int {
	m := 0
	for _, e := range elems {
		m |= protoBit(e.Key[0])
	}
	return m
}

func protoBit(b byte) int {
	switch b {
	case 6:
		return protoTCP
	case 17:
		return protoUDP
	}
	return 0
}

func portElements(elems []nftables.SetElement, interval bool) *portSet {
	var ps portSet
	var bounds []setBound
	for _, e := range elems {
		p := int(binary.BigEndian.Uint16(e.Key))
		if !interval {
			ps.add(p, p)
			continue
		}
		bounds = append(bounds, setBound{p, e.IntervalEnd})
	}
	if interval {
		ps = intervalPorts(bounds)
	}
	return &ps
}

// rule reduces one kernel rule, tracking what each register holds so that
// a comparison is understood only when its register was loaded by an
// expression this reader knows; the netlink library skips expressions it
// cannot decode, and their comparisons then land here as unknown.
func (k *kernelReader) rule(c *fwChain, nr *nftables.Rule) fwRule {
	r := fwRule{ref: c.ref() + " handle " + strconv.FormatUint(nr.Handle, 10), protos: protoAny}
	regs := registers{}
	var text []string
	unknown := func(what string) {
		r.unknown = append(r.unknown, what)
		text = append(text, what)
	}
	for _, e := range nr.Exprs {
		if r.verdict != "" {
			break
		}
		if regs.load(c, &r, e) {
			continue
		}
		switch e := e.(type) {
		case *expr.Cmp:
			text = append(text, k.cmp(&r, regs[e.Register], e, unknown)...)
		case *expr.Range:
			rg := regs[e.Register]
			if rg.kind != "dport" || len(e.FromData) != 2 || len(e.ToData) != 2 {
				unknown("range on " + kindName(rg))
				continue
			}
			var ps portSet
			ps.add(int(binary.BigEndian.Uint16(e.FromData)), int(binary.BigEndian.Uint16(e.ToData)))
			if e.Op == expr.CmpOpNeq {
				ps = complement(ps)
			}
			r.restrictPorts(&ps)
			text = append(text, fmt.Sprintf("dport %s%d-%d", negWord(e.Op == expr.CmpOpNeq), binary.BigEndian.Uint16(e.FromData), binary.BigEndian.Uint16(e.ToData)))
		case *expr.Lookup:
			var dest reg
			k.lookup(&r, c, regs[e.SourceRegister], e, unknown, &text, &dest)
			if dest.kind != "" {
				regs[e.DestRegister] = dest
			}
		case *expr.Verdict:
			if e.Kind == expr.VerdictContinue {
				continue
			}
			if !r.setVerdict(e) {
				unknown("verdict " + strconv.Itoa(int(e.Kind)))
			}
			text = append(text, strings.TrimSpace(r.verdict+" "+r.target))
		case *expr.Reject:
			r.verdict = "drop"
			text = append(text, "reject")
		case *expr.Redir:
			r.verdict, r.nat = "nat", &natTarget{port: regs.port(e.RegisterProtoMin, unknown)}
			text = append(text, "redirect"+r.nat.words())
		case *expr.NAT:
			if e.Type != expr.NATTypeDestNAT {
				// Source NAT changes no port a client can reach.
				text = append(text, "snat")
				continue
			}
			r.verdict, r.nat = "nat", &natTarget{addr: regs.addr(e.RegAddrMin, unknown), port: regs.port(e.RegProtoMin, unknown)}
			switch e.Family {
			case nfprotoIPv4:
				r.family = "ip"
			case nfprotoIPv6:
				r.family = "ip6"
			}
			text = append(text, "dnat"+r.nat.words())
		case *expr.Counter, *expr.Log:
		case *expr.Limit:
			if e.Over {
				unknown("limit over")
			}
		case *expr.Target:
			switch e.Name {
			case "REJECT":
				r.verdict = "drop"
				text = append(text, "reject")
			case "LOG", "NFLOG":
			case "DNAT", "REDIRECT":
				// iptables-nft keeps -j DNAT and -j REDIRECT (Docker's
				// published ports) as xtables targets.
				t, ok := xtNAT(e.Name, e.Info)
				if !ok {
					unknown("xt target " + e.Name)
					r.verdict, r.nat = "nat", &natTarget{addr: "?"}
					continue
				}
				r.verdict, r.nat = "nat", t
				text = append(text, map[string]string{"DNAT": "dnat", "REDIRECT": "redirect"}[e.Name]+t.words())
			default:
				unknown("xt target " + e.Name)
			}
		case *expr.Match:
			if t, ok := xtMatch(&r, e); ok {
				text = append(text, t)
			} else {
				unknown("xt match " + e.Name)
			}
		default:
			unknown(strings.TrimPrefix(fmt.Sprintf("%T", e), "*expr."))
		}
	}
	// nft prints "tcp dport 22" for the protocol check and the port load
	// that "tcp dport" compiles to.
	r.text = strings.Join(text, " ")
	for _, p := range []string{"tcp", "udp"} {
		r.text = strings.ReplaceAll(r.text, "meta l4proto "+p+" "+p+" dport", p+" dport")
	}
	return r
}

func protoName(b byte) string {
	switch b {
	case 6:
		return "tcp"
	case 17:
		return "udp"
	}
	return strconv.Itoa(int(b))
}

func complement(ps portSet) portSet {
	var all portSet
	all.fill()
	all.andNot(&ps)
	return all
}

func negWord(neg bool) string {
	if neg {
		return "!= "
	}
	return ""
}

func kindName(rg reg) string {
	if rg.kind == "" {
		return "a value the netlink library did not decode"
	}
	return rg.kind
}

func metaKind(k expr.MetaKey) string {
	switch k {
	case expr.MetaKeyL4PROTO:
		return "l4proto"
	case expr.MetaKeyIIF:
		return "iif"
	case expr.MetaKeyIIFNAME:
		return "iifname"
	case expr.MetaKeyNFPROTO:
		return "nfproto"
	}
	return "meta key " + strconv.Itoa(int(k))
}

func payloadKind(family string, p *expr.Payload) string {
	switch {
	case p.Base == expr.PayloadBaseTransportHeader && p.Offset == 2 && p.Len == 2:
		return "dport"
	case p.Base == expr.PayloadBaseTransportHeader && p.Offset == 0 && p.Len == 2:
		return "sport"
	case p.Base == expr.PayloadBaseNetworkHeader && family == "ip" && p.Offset == 9 && p.Len == 1:
		return "l4proto"
	case p.Base == expr.PayloadBaseNetworkHeader && family == "ip6" && p.Offset == 6 && p.Len == 1:
		return "l4proto"
	// A prefix match loads only the prefix's bytes.
	case p.Base == expr.PayloadBaseNetworkHeader && family == "ip" && p.Offset == 12 && p.Len <= 4:
		return "ip saddr"
	case p.Base == expr.PayloadBaseNetworkHeader && family == "ip" && p.Offset == 16 && p.Len <= 4:
		return "ip daddr"
	case p.Base == expr.PayloadBaseNetworkHeader && family == "ip6" && p.Offset == 8 && p.Len <= 16:
		return "ip6 saddr"
	case p.Base == expr.PayloadBaseNetworkHeader && family == "ip6" && p.Offset == 24 && p.Len <= 16:
		return "ip6 daddr"
	}
	return fmt.Sprintf("payload base %d offset %d len %d", p.Base, p.Offset, p.Len)
}

// ctNewStates are the conntrack states a new connection can be in: new and
// untracked.
const ctNewStates = ctNew | ctUntracked

func (k *kernelReader) cmp(r *fwRule, rg reg, e *expr.Cmp, unknown func(string)) []string {
	eq, neq := e.Op == expr.CmpOpEq, e.Op == expr.CmpOpNeq
	switch {
	case rg.kind == "l4proto" && len(e.Data) == 1 && (eq || neq):
		m := protoBit(e.Data[0])
		if neq {
			m = protoAny &^ m
		}
		r.protos &= m
		return []string{"meta l4proto " + negWord(neq) + protoName(e.Data[0])}
	case rg.kind == "dport" && len(e.Data) == 2:
		p := int(binary.BigEndian.Uint16(e.Data))
		var ps portSet
		switch e.Op {
		case expr.CmpOpEq:
			ps.add(p, p)
		case expr.CmpOpNeq:
			ps.add(p, p)
			ps = complement(ps)
		case expr.CmpOpLt:
			ps.add(0, p-1)
		case expr.CmpOpLte:
			ps.add(0, p)
		case expr.CmpOpGt:
			ps.add(p+1, 65535)
		case expr.CmpOpGte:
			ps.add(p, 65535)
		}
		r.restrictPorts(&ps)
		return []string{protoWord(r.protos) + " dport " + cmpWord(e.Op) + strconv.Itoa(p)}
	case rg.kind == "ctstate" && rg.mask != 0 && neq && allZero(e.Data):
		r.ct = rg.mask
		return []string{"ct state " + ctStates(rg.mask)}
	case (rg.kind == "iif" && eq && len(e.Data) == 4 && binary.NativeEndian.Uint32(e.Data) == 1) ||
		(rg.kind == "iifname" && eq && strings.TrimRight(string(e.Data), "\x00") == "lo"):
		// Interface index 1 is the loopback in every namespace.
		r.inert = true
		return []string{"iif lo"}
	case rg.kind == "nfproto" && eq && len(e.Data) == 1 && (e.Data[0] == nfprotoIPv4 || e.Data[0] == nfprotoIPv6):
		r.family = "ip"
		if e.Data[0] == nfprotoIPv6 {
			r.family = "ip6"
		}
		return []string{"meta nfproto " + map[string]string{"ip": "ipv4", "ip6": "ipv6"}[r.family]}
	}
	unknown(kindName(rg) + " " + cmpWord(e.Op) + renderValue(rg.kind, e.Data))
	return nil
}

// NFPROTO_IPV4 and NFPROTO_IPV6.
const (
	nfprotoIPv4 = 2
	nfprotoIPv6 = 10
)

// renderValue shows an address prefix as one ("10.0.0.0/8") and anything
// else in hex.
func renderValue(kind string, data []byte) string {
	size := map[string]int{"ip saddr": 4, "ip daddr": 4, "ip6 saddr": 16, "ip6 daddr": 16}[kind]
	if size == 0 || len(data) > size {
		return fmt.Sprintf("0x%x", data)
	}
	full := make([]byte, size)
	copy(full, data)
	addr, _ := netip.AddrFromSlice(full)
	return netip.PrefixFrom(addr, 8*len(data)).String()
}

func (k *kernelReader) lookup(r *fwRule, c *fwChain, rg reg, e *expr.Lookup, unknown func(string), text *[]string, dest *reg) {
	key := chainKey(c.family, c.table, e.SetName)
	name := "@" + e.SetName
	if strings.HasPrefix(e.SetName, "__set") || strings.HasPrefix(e.SetName, "__map") {
		name = "{ anonymous set }"
	}
	if e.IsDestRegSet && e.DestRegister == 0 {
		// Register 0 is the verdict: a verdict map.
		k.verdictMap(r, rg, key, unknown, text)
		return
	}
	if e.IsDestRegSet {
		// A data map loads a value a later expression may compare.
		*dest = reg{kind: "a value mapped from " + kindName(rg)}
		return
	}
	switch rg.kind {
	case "dport":
		ps, ok := k.setPorts[key]
		if !ok {
			unknown("dport lookup in " + name + ", which holds no ports")
			return
		}
		s := *ps
		if e.Invert {
			s = complement(s)
		}
		r.restrictPorts(&s)
		*text = append(*text, protoWord(r.protos)+" dport "+negWord(e.Invert)+renderPorts(ps, name))
	case "l4proto":
		m, ok := k.setProtos[key]
		if !ok {
			unknown("l4proto lookup in " + name)
			return
		}
		if e.Invert {
			m = protoAny &^ m
		}
		r.protos &= m
		*text = append(*text, "meta l4proto "+negWord(e.Invert)+name)
	default:
		unknown(kindName(rg) + " lookup in " + name)
	}
}

// verdictMap reads "ct state vmap { established : accept, ... }": when no
// state a new connection can be in maps to a passing verdict, the rule
// never sees one. Any other verdict map may accept and stays unmodeled.
func (k *kernelReader) verdictMap(r *fwRule, rg reg, key string, unknown func(string), text *[]string) {
	passing, ok := k.ctMaps[key]
	if ok && rg.kind == "ctstate" && rg.mask == 0 && passing&ctNewStates == 0 {
		r.inert = true
		*text = append(*text, "ct state vmap { "+ctStates(passing)+" : accept }")
		return
	}
	unknown("verdict map on " + kindName(rg))
	r.verdict = "accept"
}

// renderPorts shows an anonymous set by its members, a named one by name.
func renderPorts(ps *portSet, name string) string {
	if strings.HasPrefix(name, "@") {
		return name
	}
	var parts []string
	for _, rg := range ps.ranges() {
		if rg[0] == rg[1] {
			parts = append(parts, strconv.Itoa(rg[0]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", rg[0], rg[1]))
		}
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

func protoWord(m int) string {
	switch m {
	case protoTCP:
		return "tcp"
	case protoUDP:
		return "udp"
	}
	return "th"
}

func cmpWord(op expr.CmpOp) string {
	switch op {
	case expr.CmpOpNeq:
		return "!= "
	case expr.CmpOpLt:
		return "< "
	case expr.CmpOpLte:
		return "<= "
	case expr.CmpOpGt:
		return "> "
	case expr.CmpOpGte:
		return ">= "
	}
	return ""
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func ctStates(mask uint32) string {
	var out []string
	for i, n := range []string{"invalid", "established", "related", "new"} {
		if mask&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	if mask&(1<<6) != 0 {
		out = append(out, "untracked")
	}
	return strings.Join(out, ",")
}
