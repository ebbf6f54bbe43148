package network

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// The generator writes random nftables rulesets over a small pool of
// ports, so that a real connect to each port can tell what the ruleset
// does with it. It writes what the firewall model claims to read (every
// family, input and prerouting filter chains at several priorities,
// policies, jumps, gotos and returns, named and anonymous sets, ranges,
// negations, ct state, iif lo, meta nfproto, th dport, udp noise), the
// nat forms that move a port before the input hook sees it (redirect, with
// and without a port, and dnat to a container behind the forward path),
// and dormant tables.

// diffListening are the ports the inner namespace listens on; diffExtra
// listen nowhere, and answer only where a nat rule moves them onto a
// listener.
var (
	diffListening = []int{22, 80, 443, 8080, 9100}
	diffExtra     = []int{2222, 8443}
)

// The container: a namespace behind the inner one, reached only through
// destination NAT and the inner namespace's forward path, listening on
// containerPort.
const (
	containerIPv4 = "10.30.0.2"
	containerIPv6 = "fd30::2"
	containerPort = 80
)

// diffPorts is every port the connects try.
func diffPorts() []int { return append(slices.Clone(diffListening), diffExtra...) }

// fwCase is one generated ruleset.
type fwCase struct {
	seed uint64
	text string
	// features names the generator's choices a disagreement is filed
	// under: "nat", "dormant", "prerouting" and the like.
	features []string
	// iptables, when set, is loaded after text with iptables-nft-restore:
	// a port published the way Docker publishes one. The file reader,
	// which reads /etc/nftables.conf alone, does not see it.
	iptables string
}

type fwGen struct {
	r        *rand.Rand
	b        strings.Builder
	features map[string]bool
}

// genRuleset writes the ruleset of one seed.
func genRuleset(seed uint64) fwCase {
	g := &fwGen{r: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), features: map[string]bool{}}
	g.b.WriteString("flush ruleset\n")
	tables := 1 + g.r.IntN(3)
	for t := range tables {
		g.table(t)
	}
	if g.r.IntN(3) == 0 {
		g.natTable()
	}
	c := fwCase{seed: seed, text: g.b.String()}
	if g.r.IntN(5) == 0 {
		g.features["iptables"] = true
		c.iptables = g.docker()
	}
	for f := range g.features {
		c.features = append(c.features, f)
	}
	slices.Sort(c.features)
	return c
}

func (g *fwGen) pick(words ...string) string { return words[g.r.IntN(len(words))] }

func (g *fwGen) port() int {
	all := diffPorts()
	return all[g.r.IntN(len(all))]
}

func (g *fwGen) table(t int) {
	family := g.pick("inet", "inet", "ip", "ip6")
	fmt.Fprintf(&g.b, "table %s t%d {\n", family, t)
	if g.r.IntN(8) == 0 {
		g.b.WriteString("\tflags dormant\n")
		g.features["dormant"] = true
	}
	hasSet := g.r.IntN(3) == 0
	if hasSet {
		g.b.WriteString("\tset ports {\n\t\ttype inet_service\n\t\tflags interval\n\t\telements = { ")
		n := 1 + g.r.IntN(3)
		var elems []string
		for range n {
			elems = append(elems, g.portSpec())
		}
		g.b.WriteString(strings.Join(dedupeSpecs(elems), ", "))
		g.b.WriteString(" }\n\t}\n")
	}
	regular := g.r.IntN(3)
	for c := range regular {
		fmt.Fprintf(&g.b, "\tchain c%d {\n", c)
		g.rules(family, hasSet, nil, true)
		g.b.WriteString("\t}\n")
	}
	var targets []string
	for c := range regular {
		targets = append(targets, fmt.Sprintf("c%d", c))
	}
	if g.r.IntN(3) == 0 {
		g.features["forward"] = true
		fmt.Fprintf(&g.b, "\tchain fw {\n\t\ttype filter hook forward priority filter; policy %s;\n", g.pick("accept", "drop"))
		g.rules(family, hasSet, targets, false)
		g.b.WriteString("\t}\n")
	}
	base := 1 + g.r.IntN(2)
	for c := range base {
		hook := "input"
		if g.r.IntN(5) == 0 {
			hook = "prerouting"
			g.features["prerouting"] = true
		}
		prio := g.pick("filter", "filter", "-300", "-150", "10")
		policy := g.pick("accept", "drop", "drop")
		fmt.Fprintf(&g.b, "\tchain b%d {\n\t\ttype filter hook %s priority %s; policy %s;\n", c, hook, prio, policy)
		g.rules(family, hasSet, targets, false)
		g.b.WriteString("\t}\n")
	}
	g.b.WriteString("}\n")
}

// portSpec is a port or a range over the pool's ports.
func (g *fwGen) portSpec() string {
	a := g.port()
	if g.r.IntN(3) != 0 {
		return fmt.Sprint(a)
	}
	b := g.port()
	if a > b {
		a, b = b, a
	}
	if a == b {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%d-%d", a, b)
}

// dedupeSpecs drops elements of an interval set that overlap an earlier
// one: nft refuses overlapping intervals.
func dedupeSpecs(specs []string) []string {
	var out []string
	var taken portSet
	for _, s := range specs {
		var ps portSet
		ps.addPortSpec(s)
		var both portSet = ps
		both.and(&taken)
		if !both.empty() {
			continue
		}
		taken.or(&ps)
		out = append(out, s)
	}
	return out
}

// rules writes 0 to 6 rules; targets are the chains a base chain may jump
// or go to (regular chains jump nowhere, so there are no loops).
func (g *fwGen) rules(family string, hasSet bool, targets []string, regular bool) {
	n := g.r.IntN(7)
	for range n {
		var cond string
		switch g.r.IntN(12) {
		case 0:
			g.line("ct state established,related accept")
			continue
		case 1:
			g.line("iif lo accept")
			continue
		case 2:
			g.line("ct state invalid drop")
			continue
		case 3:
			cond = fmt.Sprintf("tcp dport %s", g.portSpec())
		case 4:
			elems := dedupeSpecs([]string{g.portSpec(), fmt.Sprint(g.port())})
			cond = "tcp dport { " + strings.Join(elems, ", ") + " }"
		case 5:
			cond = fmt.Sprintf("tcp dport != %d", g.port())
		case 6:
			cond = fmt.Sprintf("meta l4proto tcp th dport %d", g.port())
		case 7:
			cond = fmt.Sprintf("udp dport %d", g.port())
		case 8:
			if !hasSet {
				cond = fmt.Sprintf("tcp dport %d", g.port())
				break
			}
			cond = "tcp dport @ports"
		case 9:
			if family != "inet" {
				cond = fmt.Sprintf("tcp dport %d", g.port())
				break
			}
			cond = fmt.Sprintf("meta nfproto %s tcp dport %d", g.pick("ipv4", "ipv6"), g.port())
			g.features["nfproto"] = true
		case 10:
			cond = ""
		case 11:
			cond = fmt.Sprintf("tcp dport %d counter", g.port())
		}
		verdict := g.pick("accept", "accept", "drop", "reject")
		switch {
		case regular && g.r.IntN(4) == 0:
			verdict = "return"
		case len(targets) > 0 && g.r.IntN(3) == 0:
			verdict = g.pick("jump", "goto") + " " + targets[g.r.IntN(len(targets))]
			g.features["jump"] = true
		}
		if cond == "" && (verdict == "accept" || verdict == "drop" || verdict == "reject") && g.r.IntN(2) == 0 {
			// A portless verdict ends the chain for every port; keep them
			// rare so that the later rules matter.
			cond = fmt.Sprintf("tcp dport %d", g.port())
		}
		if g.r.IntN(6) == 0 {
			verdict = `log prefix "gh " ` + verdict
		}
		g.line(strings.TrimSpace(cond + " " + verdict))
	}
}

func (g *fwGen) line(s string) { g.b.WriteString("\t\t" + s + "\n") }

// natTable moves ports before the input hook: a redirect to a listening
// port, to the same port, or from a listening port elsewhere.
func (g *fwGen) natTable() {
	g.features["nat"] = true
	family := g.pick("inet", "ip", "ip6")
	fmt.Fprintf(&g.b, "table %s nat {\n\tchain pre {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n", family)
	n := 1 + g.r.IntN(3)
	for range n {
		from := g.port()
		switch g.r.IntN(4) {
		case 0:
			g.line(fmt.Sprintf("tcp dport %d redirect", from))
		case 1:
			g.features["dnat"] = true
			v4 := fmt.Sprintf("%s:%d", containerIPv4, containerPort)
			v6 := fmt.Sprintf("[%s]:%d", containerIPv6, containerPort)
			switch family {
			case "ip":
				g.line(fmt.Sprintf("tcp dport %d dnat to %s", from, v4))
			case "ip6":
				g.line(fmt.Sprintf("tcp dport %d dnat to %s", from, v6))
			default:
				if g.r.IntN(2) == 0 {
					g.line(fmt.Sprintf("tcp dport %d dnat ip to %s", from, v4))
				} else {
					g.line(fmt.Sprintf("tcp dport %d dnat ip6 to %s", from, v6))
				}
			}
		default:
			to := diffListening[g.r.IntN(len(diffListening))]
			g.line(fmt.Sprintf("tcp dport %d redirect to :%d", from, to))
		}
	}
	g.b.WriteString("\t}\n}\n")
}

// docker writes what Docker's iptables backend loads to publish the
// container's port on the host: DNAT in the nat table's PREROUTING (in a
// DOCKER chain), and FORWARD rules that let the connection and its replies
// through, or, as a user's DOCKER-USER chain may, drop it.
func (g *fwGen) docker() string {
	from := diffPorts()[g.r.IntN(len(diffPorts()))]
	var b strings.Builder
	fmt.Fprintf(&b, "*nat\n:PREROUTING ACCEPT [0:0]\n:DOCKER - [0:0]\n-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER\n-A DOCKER -p tcp -m tcp --dport %d -j DNAT --to-destination %s:%d\nCOMMIT\n", from, containerIPv4, containerPort)
	fmt.Fprintf(&b, "*filter\n:FORWARD %s [0:0]\n:DOCKER-USER - [0:0]\n-A FORWARD -j DOCKER-USER\n", g.pick("ACCEPT", "DROP", "DROP"))
	if g.r.IntN(3) == 0 {
		fmt.Fprintf(&b, "-A DOCKER-USER -p tcp -m tcp --dport %d -j DROP\n", containerPort)
	}
	b.WriteString("-A DOCKER-USER -j RETURN\n")
	if g.r.IntN(4) != 0 {
		b.WriteString("-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n")
		fmt.Fprintf(&b, "-A FORWARD -d %s/32 -p tcp -m tcp --dport %d -j ACCEPT\n", containerIPv4, containerPort)
	}
	b.WriteString("COMMIT\n")
	return b.String()
}
