package network

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// nftablesConf is the file nftables.service loads at boot.
const nftablesConf = "/etc/nftables.conf"

// readNftables parses /etc/nftables.conf and what it includes; nil when
// there is no file or no filter chain on the input hook.
func readNftables(fsys sysroot.FS) (*facts.Firewall, error) {
	p := newNftParser(fsys)
	found, err := p.file(nftablesConf, 0)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, nil
	}
	v, err := p.rs.verdict()
	if err != nil {
		return nil, fmt.Errorf("evaluating %s: %w", fsys.Display(nftablesConf), err)
	}
	if !v.hasInput && !v.publishes() {
		return nil, nil
	}
	fw := v.firewall("nftables", "file")
	fw.Path = nftablesConf
	wants, err := fsys.Glob("/etc/systemd/system/*.wants/nftables.service")
	if err != nil {
		return nil, fmt.Errorf("looking for nftables.service: %w", err)
	}
	fw.Enabled = len(wants) > 0
	return fw, nil
}

// firewall turns a verdict into facts from source, "kernel" or "file".
func (v fwVerdict) firewall(backend, source string) *facts.Firewall {
	fw := &facts.Firewall{
		Backend:            backend,
		DefaultInputPolicy: v.policy,
		AllowedPorts:       v.ports,
		Source:             source,
		Admits:             v.admits,
		Unmodeled:          v.unknown,
	}
	for _, f := range v.families {
		fw.Families = append(fw.Families, facts.FirewallFamily{
			Family:             f.name,
			Filtered:           f.filtered,
			DefaultInputPolicy: f.policy,
			AllowedPorts:       f.ports,
			Admits:             f.admits,
			Chains:             f.chains,
			Source:             source,
			PolicyLocation:     placed(f.policyAt),
			Published:          f.published,
		})
	}
	return fw
}

// placed is at, or nil when it names no line.
func placed(at collect.FileLine) *collect.FileLine {
	if at.Line == 0 {
		return nil
	}
	return &at
}

// ParseNftables parses the text of one nftables file (includes are not
// followed) and returns the default policy and allowed ports of its input
// hook filter chains, and whether it has any. It is exported for tests and
// tools that hold a ruleset in memory.
func ParseNftables(data []byte) (policy string, ports []int, hasInput bool, err error) {
	v, err := parseNftVerdict(data)
	if err != nil {
		return "", nil, false, err
	}
	return v.policy, v.ports, v.hasInput, nil
}

func parseNftVerdict(data []byte) (fwVerdict, error) {
	p := newNftParser(nil)
	if err := p.parse(data, "", 0); err != nil {
		return fwVerdict{}, err
	}
	return p.rs.verdict()
}

type nftParser struct {
	fsys      sysroot.FS // nil: includes are not followed
	defines   map[string][]string
	rs        fwRuleset
	files     int
	nElements int
}

func newNftParser(fsys sysroot.FS) *nftParser {
	return &nftParser{fsys: fsys, defines: map[string][]string{}}
}

func familyOK(f string) bool { return f == "inet" || f == "ip" || f == "ip6" }

// file parses one file; found is false when it does not exist.
func (p *nftParser) file(name string, depth int) (bool, error) {
	if p.files++; p.files > maxIncludeFiles {
		return false, fmt.Errorf("parsing nftables config: more than %d files included", maxIncludeFiles)
	}
	data, ok, err := textfile.ReadOptional(p.fsys, name)
	if err != nil {
		return false, fmt.Errorf("reading nftables config: %w", err)
	}
	if !ok {
		return false, nil
	}
	if err := p.parse(data, name, depth); err != nil {
		return false, fmt.Errorf("parsing %s: %w", p.fsys.Display(name), err)
	}
	return true, nil
}

// parse walks the statement structure: top level (table, include, define,
// the flat add/create syntax), tables (chains, sets), chains (rules).
func (p *nftParser) parse(data []byte, name string, depth int) error {
	toks, err := tokenizeNft(data)
	if err != nil {
		return err
	}
	return eachStatement(toks, true, func(stmt, block []nftToken) error {
		return p.topLevel(stmt, block, name, depth)
	})
}

// eachStatement calls fn for every non-empty statement of toks; decl says
// whether a brace after a statement's first word opens a declaration's block.
func eachStatement(toks []nftToken, decl bool, fn func(stmt, block []nftToken) error) error {
	for pos := 0; pos < len(toks); {
		stmt, block, next, err := statement(toks, pos, decl)
		if err != nil {
			return err
		}
		pos = next
		if len(stmt) == 0 {
			continue
		}
		if err := fn(stmt, block); err != nil {
			return err
		}
	}
	return nil
}

func (p *nftParser) topLevel(stmt, block []nftToken, name string, depth int) error {
	words := texts(stmt)
	line := stmt[0].line
	switch words[0] {
	case "include":
		if len(words) < 2 || p.fsys == nil {
			return nil
		}
		if depth >= maxIncludeDepth {
			return fmt.Errorf("line %d: includes nested deeper than %d", line, maxIncludeDepth)
		}
		return p.include(strings.Trim(words[1], `"`), name, depth)
	case "define", "redefine":
		// define NAME = value...
		if len(words) >= 4 && words[2] == "=" {
			p.defines[words[1]] = p.expand(words[3:])
		}
	case "table":
		if block == nil || len(words) < 3 || !familyOK(words[1]) {
			return nil
		}
		return p.table(block, words[1], words[2], name)
	case "add", "create", "insert":
		// The flat syntax: add chain inet filter input { ... }, add rule
		// inet filter input tcp dport 22 accept, add set and add element;
		// add table inet filter { flags dormant; }.
		if len(words) == 4 && words[1] == "table" && familyOK(words[2]) && block != nil {
			return p.table(block, words[2], words[3], name)
		}
		if len(words) < 5 || !familyOK(words[2]) {
			return nil
		}
		fam, table, obj := words[2], words[3], words[4]
		switch words[1] {
		case "chain":
			c, err := p.rs.chain(fam, table, obj)
			if err != nil {
				return fmt.Errorf("line %d: %w", line, err)
			}
			if block != nil {
				return p.chain(block, c, name)
			}
		case "rule":
			c, err := p.rs.chain(fam, table, obj)
			if err != nil {
				return fmt.Errorf("line %d: %w", line, err)
			}
			return p.rule(c, p.expand(words[5:]), name, line, words[0] == "insert")
		case "set":
			if block != nil {
				return p.setBlock(block, fam, table, obj)
			}
		case "element":
			return p.elements(fam, table, obj, p.expand(words[5:]), line)
		}
	}
	return nil
}

func (p *nftParser) table(toks []nftToken, family, table, file string) error {
	return eachStatement(toks, true, func(stmt, block []nftToken) error {
		words := texts(stmt)
		if len(words) >= 2 && words[0] == "flags" && block == nil {
			// flags dormant: the table's chains see no packet.
			for _, w := range words[1:] {
				if slices.Contains(strings.Split(w, ","), "dormant") {
					p.rs.setDormant(family, table)
				}
			}
			return nil
		}
		if len(words) < 2 || block == nil {
			return nil
		}
		switch words[0] {
		case "chain":
			c, err := p.rs.chain(family, table, words[1])
			if err != nil {
				return fmt.Errorf("line %d: %w", stmt[0].line, err)
			}
			return p.chain(block, c, file)
		case "set":
			return p.setBlock(block, family, table, words[1])
		}
		return nil
	})
}

func (p *nftParser) chain(toks []nftToken, c *fwChain, file string) error {
	return eachStatement(toks, false, func(stmt, _ []nftToken) error {
		words := p.expand(texts(stmt))
		if len(words) == 0 {
			return nil
		}
		at := collect.FileLine{File: file, Line: stmt[0].line}
		switch words[0] {
		case "type":
			// type filter hook input priority filter
			if len(words) >= 4 && words[2] == "hook" {
				c.kind, c.hook = words[1], words[3]
				if i := slices.Index(words, "priority"); i > 0 {
					c.prio = nftPriority(words[i+1:])
				}
				// Until a policy statement says otherwise, the hook's
				// declaration is where the chain's accept comes from.
				if c.policyAt.Line == 0 && file != "" {
					c.policyAt = at
				}
			}
		case "policy":
			if len(words) >= 2 {
				c.policy = strings.ToLower(words[1])
				if file != "" {
					c.policyAt = at
				}
			}
		case "comment", "devices", "flags":
		default:
			return p.rule(c, words, file, stmt[0].line, false)
		}
		return nil
	})
}

// setBlock reads a set declaration; only its elements matter here, and
// whether they are ports is decided by the rule that looks them up.
func (p *nftParser) setBlock(toks []nftToken, family, table, name string) error {
	if _, err := p.rs.set(family, table, name); err != nil {
		return err
	}
	return eachStatement(toks, false, func(stmt, _ []nftToken) error {
		words := p.expand(texts(stmt))
		if len(words) >= 3 && words[0] == "elements" && words[1] == "=" {
			return p.elements(family, table, name, words[2:], stmt[0].line)
		}
		return nil
	})
}

// elements adds "{ 22, 80-90 }" to a named set.
func (p *nftParser) elements(family, table, name string, words []string, line int) error {
	s, err := p.rs.set(family, table, name)
	if err != nil {
		return fmt.Errorf("line %d: %w", line, err)
	}
	for _, w := range words {
		if w == "{" || w == "}" || w == "," {
			continue
		}
		if p.nElements++; p.nElements > maxSetElements {
			return fmt.Errorf("line %d: more than %d set elements", line, maxSetElements)
		}
		s.addPortSpec(w)
	}
	return nil
}

// expand substitutes $NAME from define statements, one level deep.
func (p *nftParser) expand(words []string) []string {
	var out []string
	for _, w := range words {
		if v, ok := p.defines[strings.TrimPrefix(w, "$")]; ok && strings.HasPrefix(w, "$") {
			out = append(out, v...)
			continue
		}
		out = append(out, w)
	}
	return out
}

// rule reduces one rule's words to a fwRule. Conditions it recognizes are
// the protocol, the destination port (a value, a range, an anonymous set, a
// named set), ct state and the loopback interface; anything else is kept
// as an unknown condition rather than guessed at.
func (p *nftParser) rule(c *fwChain, words []string, file string, line int, first bool) error {
	ref := "line " + strconv.Itoa(line)
	if file != "" {
		ref = file + ":" + strconv.Itoa(line)
	}
	text := strings.ReplaceAll(strings.Join(words, " "), " , ", ", ")
	r := fwRule{ref: ref, text: text, protos: protoAny}
	if file != "" {
		r.at = collect.FileLine{File: file, Line: line}
	}
	for i := 0; i < len(words) && r.verdict == ""; {
		i = p.term(&r, c, words, i)
	}
	if first {
		if err := p.rs.addRule(c, r); err != nil {
			return err
		}
		copy(c.rules[1:], c.rules)
		c.rules[0] = r
		return nil
	}
	return p.rs.addRule(c, r)
}

// plainStatement reads a verdict or a statement that decides nothing (counter,
// comment, log, limit) at words[i], and returns the index after it, or
// false when words[i] starts none.
func plainStatement(r *fwRule, words []string, i int) (int, bool) {
	w, next := words[i], at(words, i+1)
	switch w {
	case "accept", "drop", "return":
		r.verdict = w
		return i + 1, true
	case "reject":
		r.verdict = "drop"
		return len(words), true
	case "jump", "goto":
		r.verdict, r.target = w, next
		return i + 2, true
	case "continue":
		return i + 1, true
	case "counter":
		if next == "packets" {
			return i + 5, true
		}
		return i + 1, true
	case "comment":
		return i + 2, true
	case "log":
		i++
		for i+1 < len(words) && slices.Contains([]string{"prefix", "level", "group", "snaplen", "queue-threshold", "flags"}, words[i]) {
			i += 2
		}
		return i, true
	case "limit":
		// limit rate [over] N/second [burst N packets]
		j := i + 2
		if at(words, j) == "over" {
			r.unknown = append(r.unknown, "limit rate over")
			j++
		}
		j++
		if at(words, j) == "burst" {
			j += 3
		}
		return j, true
	}
	return i, false
}

// term reads one condition or statement at words[i] and returns the index
// after it.
func (p *nftParser) term(r *fwRule, c *fwChain, words []string, i int) int {
	if j, ok := plainStatement(r, words, i); ok {
		return j
	}
	if j, ok := natStatement(r, words, i); ok {
		return j
	}
	w, next := words[i], at(words, i+1)
	switch w {
	case "tcp", "udp", "th":
		switch w {
		case "tcp":
			r.protos &= protoTCP
		case "udp":
			r.protos &= protoUDP
		}
		if next == "dport" {
			return p.dport(r, c, words, i+2)
		}
	case "meta":
		if next == "l4proto" {
			return protoMatch(r, words, i+2)
		}
		if next == "nfproto" && (at(words, i+2) == "ipv4" || at(words, i+2) == "ipv6") {
			r.family = map[string]string{"ipv4": "ip", "ipv6": "ip6"}[words[i+2]]
			return i + 3
		}
		if next == "iif" || next == "iifname" {
			return iifMatch(r, words, i+2)
		}
	case "ip":
		if next == "protocol" {
			return protoMatch(r, words, i+2)
		}
	case "ip6":
		if next == "nexthdr" {
			return protoMatch(r, words, i+2)
		}
	case "iif", "iifname":
		return iifMatch(r, words, i+1)
	case "ct":
		if next == "state" {
			return ctStateMatch(r, words, i+2)
		}
	}
	// An unknown condition: name it by its first words and skip to the
	// next word this reader knows.
	cond := w
	if next != "" && !knownWord(next) {
		cond += " " + next
	}
	r.unknown = append(r.unknown, cond)
	i++
	for i < len(words) && !knownWord(words[i]) {
		i++
	}
	return i
}

func knownWord(w string) bool {
	switch w {
	case "accept", "drop", "reject", "return", "jump", "goto", "continue", "counter", "comment", "log", "limit",
		"redirect", "dnat", "tcp", "udp", "th", "meta", "ip", "ip6", "iif", "iifname", "ct":
		return true
	}
	return false
}

func at(words []string, i int) string {
	if i < len(words) {
		return words[i]
	}
	return ""
}

// operand returns the value at words[i]: one word, or the words of an
// anonymous set without its braces and commas; neg is true after "!=".
func operand(words []string, i int) (vals []string, neg bool, next int) {
	switch at(words, i) {
	case "!=":
		neg = true
		i++
	case "==", "eq":
		i++
	}
	if at(words, i) != "{" {
		if i >= len(words) {
			return nil, neg, i
		}
		// A list without braces, as nft takes for flags: the tokenizer
		// made "established,related" three words.
		vals = []string{words[i]}
		for i++; at(words, i) == "," && i+1 < len(words); i += 2 {
			vals = append(vals, words[i+1])
		}
		return vals, neg, i
	}
	for i++; i < len(words) && words[i] != "}"; i++ {
		if words[i] != "," {
			vals = append(vals, words[i])
		}
	}
	return vals, neg, i + 1
}

func (p *nftParser) dport(r *fwRule, c *fwChain, words []string, i int) int {
	if at(words, i) == "vmap" || at(words, i) == "map" {
		// A verdict map may accept any of its ports: unmodeled, and
		// flagged as possibly accepting.
		r.unknown = append(r.unknown, "dport "+words[i])
		r.verdict = "accept"
		return len(words)
	}
	vals, neg, next := operand(words, i)
	var ports portSet
	for _, v := range vals {
		if name, ok := strings.CutPrefix(v, "@"); ok {
			r.set, r.setNeg = chainKey(c.family, c.table, name), neg
			r.setName = name
			return next
		}
		for _, part := range strings.Split(v, ",") {
			if _, ok := portNumber(strings.SplitN(strings.SplitN(part, "-", 2)[0], ":", 2)[0]); !ok {
				r.unknown = append(r.unknown, "dport "+v)
			}
		}
		ports.addPortSpec(v)
	}
	if neg {
		var all portSet
		all.fill()
		all.andNot(&ports)
		ports = all
	}
	r.restrictPorts(&ports)
	return next
}

// protoMatch reads "tcp", "{ tcp, udp }", "6" or "!= tcp".
func protoMatch(r *fwRule, words []string, i int) int {
	vals, neg, next := operand(words, i)
	m := 0
	for _, v := range vals {
		switch strings.ToLower(v) {
		case "tcp", "6":
			m |= protoTCP
		case "udp", "17":
			m |= protoUDP
		}
	}
	if neg {
		m = protoAny &^ m
	}
	r.protos &= m
	return next
}

// iifMatch makes a rule that only loopback traffic meets inert; another
// interface restricts the rule in a way the model does not follow.
func iifMatch(r *fwRule, words []string, i int) int {
	vals, neg, next := operand(words, i)
	if !neg && len(vals) == 1 && strings.Trim(vals[0], `"`) == "lo" {
		r.inert = true
		return next
	}
	r.unknown = append(r.unknown, "iif "+strings.Join(vals, ","))
	return next
}

// ctStateMatch: a rule for established, related or invalid packets never
// sees a new connection, so it admits no port.
func ctStateMatch(r *fwRule, words []string, i int) int {
	if at(words, i) == "vmap" {
		return ctStateVmap(r, words, i+1)
	}
	vals, neg, next := operand(words, i)
	var states []string
	for _, v := range vals {
		states = append(states, strings.Split(v, ",")...)
	}
	var mask uint32
	for _, s := range states {
		bit, ok := ctStateBits[s]
		if !ok {
			r.unknown = append(r.unknown, "ct state "+s)
			return next
		}
		mask |= bit
	}
	if neg {
		mask = ctAllStates &^ mask
	}
	r.ct = mask
	return next
}

// ctStateBits are the conntrack states as the kernel's ct state bits.
var ctStateBits = map[string]uint32{"invalid": ctInvalid, "established": 1 << 1, "related": 1 << 2, "new": 1 << 3, "untracked": ctUntracked}

// ctStateVmap reads "ct state vmap { established : accept, invalid : drop }":
// a rule whose map sends no state of a new connection on never sees one.
func ctStateVmap(r *fwRule, words []string, i int) int {
	vals, _, _ := operand(words, i)
	for j := 0; j+2 < len(vals); j += 3 {
		if vals[j+1] != ":" {
			break
		}
		isNew := vals[j] == "new" || vals[j] == "untracked"
		if isNew && vals[j+2] != "drop" && vals[j+2] != "continue" {
			r.unknown = append(r.unknown, "ct state vmap for "+vals[j])
			r.verdict = "accept"
			return len(words)
		}
	}
	r.inert = true
	return len(words)
}
