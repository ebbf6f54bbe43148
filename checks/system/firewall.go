package system

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/facts"
	"github.com/gpuhost/gpuhost/checks/sysroot"
)

const (
	// maxIncludeDepth and maxIncludeFiles bound nftables include chains.
	maxIncludeDepth = 8
	maxIncludeFiles = 64
	// maxNestDepth bounds brace nesting in an nftables file.
	maxNestDepth = 32
)

type firewallCollector struct{}

var _ collector.Collector = firewallCollector{}

func (firewallCollector) Name() string { return "firewall" }

// Collect reads the configured firewall, offline and live alike (the live
// ruleset needs netlink and privileges; the configuration is what persists
// across reboots). On an offline rootfs the network collector is
// not_applicable, so the Network it creates holds only the firewall and a nil
// Listening.
func (firewallCollector) Collect(_ context.Context, env *collector.Env, f *facts.Facts) error {
	fw, err := readFirewall(env.FS)
	if err != nil {
		return err
	}
	if f.Network == nil {
		f.Network = &facts.Network{}
		if env.Live {
			f.Network.Listening = []facts.Listener{}
		}
	}
	f.Network.Firewall = fw
	return nil
}

// readFirewall prefers an enabled ufw, then an nftables input hook chain,
// and otherwise reports no firewall, which accepts everything.
func readFirewall(fsys sysroot.FS) (*facts.Firewall, error) {
	ufw, err := readUfw(fsys)
	if err != nil {
		return nil, err
	}
	if ufw != nil && ufw.Enabled {
		return ufw, nil
	}
	nft, err := readNftables(fsys)
	if err != nil {
		return nil, err
	}
	if nft != nil {
		return nft, nil
	}
	return &facts.Firewall{Backend: "none", DefaultInputPolicy: "accept", AllowedPorts: []int{}}, nil
}

// portSet collects allowed ports; a bitmap over the whole port space keeps
// a rule like 1-65535 from costing more than the set itself.
type portSet [65536 / 64]uint64

func (s *portSet) add(lo, hi int) {
	if lo < 0 || hi > 65535 || lo > hi {
		return
	}
	for p := lo; p <= hi; p++ {
		s[p/64] |= 1 << (p % 64)
	}
}

func (s *portSet) list() []int {
	out := []int{}
	for p := 0; p < 65536; p++ {
		if s[p/64]&(1<<(p%64)) != 0 {
			out = append(out, p)
		}
	}
	return out
}

// addPortSpec adds "22", "80,443", "6000:6007" or "8000-8080"; service
// names resolve through a small table, other words are ignored.
func (s *portSet) addPortSpec(spec string) {
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, ":")
		if !isRange {
			lo, hi, isRange = strings.Cut(part, "-")
		}
		a, ok := portNumber(lo)
		if !ok {
			continue
		}
		b := a
		if isRange {
			if b, ok = portNumber(hi); !ok {
				continue
			}
		}
		s.add(a, b)
	}
}

// services covers the names people write in firewall rules instead of
// numbers; /etc/services of the target is not consulted.
var services = map[string]int{
	"ssh": 22, "http": 80, "https": 443, "domain": 53, "dns": 53, "ntp": 123,
	"smtp": 25, "ftp": 21, "telnet": 23, "snmp": 161, "bgp": 179, "ldap": 389,
	"ldaps": 636, "imap": 143, "imaps": 993, "pop3": 110, "pop3s": 995,
	"mysql": 3306, "postgresql": 5432, "rdp": 3389, "http-alt": 8080,
	"submission": 587, "kerberos": 88, "nfs": 2049, "sunrpc": 111,
}

func portNumber(s string) (int, bool) {
	if n, err := strconv.Atoi(s); err == nil {
		return n, n >= 0 && n <= 65535
	}
	n, ok := services[strings.ToLower(s)]
	return n, ok
}

// readUfw returns ufw's configuration, or nil when ufw is not installed.
func readUfw(fsys sysroot.FS) (*facts.Firewall, error) {
	const conf, defaults = "/etc/ufw/ufw.conf", "/etc/default/ufw"
	data, ok, err := readOptional(fsys, conf)
	if err != nil {
		return nil, fmt.Errorf("reading ufw config: %w", err)
	}
	if !ok {
		return nil, nil
	}
	vars := map[string]string{}
	if _, err := parseShell(data, vars, false); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", fsys.Display(conf), err)
	}
	fw := &facts.Firewall{
		Backend:            "ufw",
		Enabled:            strings.EqualFold(vars["ENABLED"], "yes"),
		DefaultInputPolicy: "drop",
		Source:             conf,
	}
	data, ok, err = readOptional(fsys, defaults)
	if err != nil {
		return nil, fmt.Errorf("reading ufw defaults: %w", err)
	}
	if ok {
		dv := map[string]string{}
		if _, err := parseShell(data, dv, false); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", fsys.Display(defaults), err)
		}
		if p := strings.ToLower(dv["DEFAULT_INPUT_POLICY"]); p != "" {
			fw.DefaultInputPolicy = p
		}
	}
	var ports portSet
	for _, name := range []string{"/etc/ufw/user.rules", "/etc/ufw/user6.rules"} {
		data, ok, err := readOptional(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("reading ufw rules: %w", err)
		}
		if !ok {
			continue
		}
		if err := parseUfwRules(data, &ports); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", fsys.Display(name), err)
		}
	}
	fw.AllowedPorts = ports.list()
	return fw, nil
}

// parseUfwRules reads ufw's user rules: both the "### tuple ###" comments
// ufw keeps as its own record and the iptables-restore lines it loads. Only
// incoming allow and limit rules with a destination port count; a rule
// without a port (allow from a network) opens no specific port and is not
// represented.
func parseUfwRules(data []byte, ports *portSet) error {
	for i, l := range lines(data) {
		if err := checkText([]byte(l)); err != nil {
			return fmt.Errorf("line %d: %w", i+1, err)
		}
		l = strings.TrimSpace(l)
		if rest, ok := strings.CutPrefix(l, "### tuple ###"); ok {
			f := strings.Fields(rest)
			// action proto dport dst sport src [dapp sapp] direction
			if len(f) < 7 {
				continue
			}
			action, dir := f[0], f[len(f)-1]
			if !(strings.HasPrefix(action, "allow") || strings.HasPrefix(action, "limit")) {
				continue
			}
			if dir != "in" && !strings.HasPrefix(dir, "in_") {
				continue
			}
			if f[2] != "any" {
				ports.addPortSpec(f[2])
			}
			continue
		}
		if !strings.HasPrefix(l, "-A ") {
			continue
		}
		f := strings.Fields(l)
		chain := f[1]
		if chain != "ufw-user-input" && chain != "ufw6-user-input" {
			continue
		}
		target, spec := "", ""
		for j := 2; j+1 < len(f); j++ {
			switch f[j] {
			case "-j":
				target = f[j+1]
			case "--dport", "--dports", "--destination-port":
				spec = f[j+1]
			}
		}
		if spec != "" && (target == "ACCEPT" || strings.HasPrefix(target, "ufw-user-limit")) {
			ports.addPortSpec(spec)
		}
	}
	return nil
}

// readNftables parses /etc/nftables.conf and what it includes; nil when
// there is no file or no filter chain on the input hook.
func readNftables(fsys sysroot.FS) (*facts.Firewall, error) {
	const conf = "/etc/nftables.conf"
	p := &nftParser{fsys: fsys, defines: map[string][]string{}}
	found, err := p.file(conf, 0)
	if err != nil {
		return nil, err
	}
	p.finish()
	if !found || len(p.chains) == 0 {
		return nil, nil
	}
	fw := &facts.Firewall{Backend: "nftables", DefaultInputPolicy: "accept", Source: conf}
	var ports portSet
	for _, c := range p.chains {
		// A packet must pass every input base chain, so the strictest
		// policy is the effective one.
		if policyRank(c.policy) > policyRank(fw.DefaultInputPolicy) {
			fw.DefaultInputPolicy = c.policy
		}
		for i := range ports {
			ports[i] |= c.ports[i]
		}
	}
	fw.AllowedPorts = ports.list()
	wants, err := fsys.Glob("/etc/systemd/system/*.wants/nftables.service")
	if err != nil {
		return nil, fmt.Errorf("looking for nftables.service: %w", err)
	}
	fw.Enabled = len(wants) > 0
	return fw, nil
}

func policyRank(p string) int {
	switch p {
	case "drop":
		return 2
	case "reject":
		return 1
	}
	return 0
}

// ParseNftables parses the text of one nftables file (includes are not
// followed) and returns the default policy and allowed ports of its input
// hook filter chains, and whether it has any. It is exported for tests and
// tools that hold a ruleset in memory.
func ParseNftables(data []byte) (policy string, ports []int, hasInput bool, err error) {
	p := &nftParser{defines: map[string][]string{}}
	if err := p.parse(data, "", 0); err != nil {
		return "", nil, false, err
	}
	p.finish()
	var set portSet
	policy = "accept"
	for _, c := range p.chains {
		if policyRank(c.policy) > policyRank(policy) {
			policy = c.policy
		}
		for i := range set {
			set[i] |= c.ports[i]
		}
	}
	return policy, set.list(), len(p.chains) > 0, nil
}

type nftChain struct {
	policy  string
	ports   portSet
	isInput bool
}

type nftParser struct {
	fsys    sysroot.FS // nil: includes are not followed
	defines map[string][]string
	byKey   map[string]*nftChain
	order   []*nftChain
	chains  []*nftChain // the input hook chains, filled by finish
	files   int
}

// chainFor returns the chain family/table/name, creating it; nftables
// merges repeated declarations of one chain, and so does this.
func (p *nftParser) chainFor(family, table, name string) *nftChain {
	if p.byKey == nil {
		p.byKey = map[string]*nftChain{}
	}
	key := family + "\x00" + table + "\x00" + name
	c, ok := p.byKey[key]
	if !ok {
		if len(p.order) >= maxTableEntries {
			return &nftChain{policy: "accept"}
		}
		c = &nftChain{policy: "accept"}
		p.byKey[key] = c
		p.order = append(p.order, c)
	}
	return c
}

// finish keeps the chains hooked on input.
func (p *nftParser) finish() {
	p.chains = p.chains[:0]
	for _, c := range p.order {
		if c.isInput {
			p.chains = append(p.chains, c)
		}
	}
}

func familyOK(f string) bool { return f == "inet" || f == "ip" || f == "ip6" }

// file parses one file; found is false when it does not exist.
func (p *nftParser) file(name string, depth int) (bool, error) {
	if p.files++; p.files > maxIncludeFiles {
		return false, fmt.Errorf("parsing nftables config: more than %d files included", maxIncludeFiles)
	}
	data, ok, err := readOptional(p.fsys, name)
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

// nftToken is a word, a string or one of { } ; , and a newline "\n".
type nftToken struct {
	text string
	line int
}

func tokenizeNft(data []byte) ([]nftToken, error) {
	s := string(data)
	var out []nftToken
	line := 1
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			out = append(out, nftToken{"\n", line})
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			line++
			i += 2
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '{' || c == '}' || c == ';' || c == ',':
			out = append(out, nftToken{string(c), line})
			i++
		case c == '"':
			end := strings.IndexByte(s[i+1:], '"')
			if end < 0 || strings.Contains(s[i+1:i+1+end], "\n") {
				return nil, fmt.Errorf("line %d: unterminated string", line)
			}
			out = append(out, nftToken{s[i : i+end+2], line})
			i += end + 2
		case c < 0x20 || c == 0x7f:
			return nil, fmt.Errorf("line %d: %w", line, errBinary)
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\r\n{};,#\"", rune(s[j])) && s[j] >= 0x20 && s[j] != 0x7f {
				j++
			}
			out = append(out, nftToken{s[i:j], line})
			i = j
		}
	}
	return out, nil
}

// parse walks the statement structure: top level (table, include, define),
// tables (chain, and set/map/... declarations skipped), chains (rules).
func (p *nftParser) parse(data []byte, name string, depth int) error {
	toks, err := tokenizeNft(data)
	if err != nil {
		return err
	}
	pos := 0
	for pos < len(toks) {
		stmt, block, next, err := statement(toks, pos, true)
		if err != nil {
			return err
		}
		pos = next
		if len(stmt) == 0 {
			continue
		}
		words := texts(stmt)
		switch words[0] {
		case "include":
			if len(words) < 2 || p.fsys == nil {
				continue
			}
			if depth >= maxIncludeDepth {
				return fmt.Errorf("line %d: includes nested deeper than %d", stmt[0].line, maxIncludeDepth)
			}
			if err := p.include(strings.Trim(words[1], `"`), name, depth); err != nil {
				return err
			}
		case "define", "redefine":
			// define NAME = value...
			if len(words) >= 4 && words[2] == "=" {
				p.defines[words[1]] = words[3:]
			}
		case "table":
			if block == nil || len(words) < 3 || !familyOK(words[1]) {
				continue
			}
			if err := p.table(block, words[1], words[2]); err != nil {
				return err
			}
		case "add", "create":
			// The flat syntax: add chain inet filter input { ... } and
			// add rule inet filter input tcp dport 22 accept.
			if len(words) < 5 || !familyOK(words[2]) {
				continue
			}
			switch words[1] {
			case "chain":
				c := p.chainFor(words[2], words[3], words[4])
				if block != nil {
					p.chain(block, c)
				}
			case "rule":
				c := p.chainFor(words[2], words[3], words[4])
				ruleDports(p.expand(words[5:]), &c.ports)
			}
		}
	}
	return nil
}

func (p *nftParser) include(pattern, from string, depth int) error {
	if !strings.HasPrefix(pattern, "/") {
		// nft resolves relative includes against its include path,
		// /etc by default on Debian and Ubuntu.
		pattern = "/etc/" + pattern
	}
	var names []string
	if strings.ContainsAny(pattern, "*?[") {
		m, err := p.fsys.Glob(pattern)
		if err != nil {
			return fmt.Errorf("expanding include %q: %w", pattern, err)
		}
		for _, n := range m {
			names = append(names, "/"+strings.TrimPrefix(n, "/"))
		}
	} else {
		names = []string{pattern}
	}
	for _, n := range names {
		found, err := p.file(n, depth+1)
		if err != nil {
			return err
		}
		if !found && !strings.ContainsAny(pattern, "*?[") {
			return fmt.Errorf("%s includes %s, which does not exist", from, n)
		}
	}
	return nil
}

func (p *nftParser) table(toks []nftToken, family, name string) error {
	pos := 0
	for pos < len(toks) {
		stmt, block, next, err := statement(toks, pos, true)
		if err != nil {
			return err
		}
		pos = next
		words := texts(stmt)
		if len(words) >= 2 && words[0] == "chain" && block != nil {
			p.chain(block, p.chainFor(family, name, words[1]))
		}
	}
	return nil
}

func (p *nftParser) chain(toks []nftToken, c *nftChain) {
	pos := 0
	for pos < len(toks) {
		stmt, _, next, err := statement(toks, pos, false)
		pos = next
		if err != nil {
			return
		}
		words := p.expand(texts(stmt))
		if len(words) == 0 {
			continue
		}
		switch words[0] {
		case "type":
			// type filter hook input priority filter
			if len(words) >= 4 && words[1] == "filter" && words[2] == "hook" && words[3] == "input" {
				c.isInput = true
			}
		case "policy":
			if len(words) >= 2 {
				c.policy = strings.ToLower(words[1])
			}
		default:
			ruleDports(words, &c.ports)
		}
	}
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

// ruleDports adds the destination ports of an accept rule: "tcp dport 22
// accept", "udp dport { 53, 123 } accept", "th dport 8000-8080 accept".
func ruleDports(words []string, ports *portSet) {
	verdict := ""
	for _, w := range words {
		switch w {
		case "accept", "drop", "reject", "jump", "goto", "return", "queue":
			verdict = w
		}
	}
	if verdict != "accept" {
		return
	}
	for i := 0; i+1 < len(words); i++ {
		if words[i] != "dport" {
			continue
		}
		j := i + 1
		if words[j] == "!=" {
			return
		}
		if words[j] == "{" {
			for j++; j < len(words) && words[j] != "}"; j++ {
				if words[j] != "," {
					ports.addPortSpec(words[j])
				}
			}
			continue
		}
		ports.addPortSpec(words[j])
	}
}

func texts(toks []nftToken) []string {
	out := make([]string, 0, len(toks))
	for _, t := range toks {
		out = append(out, t.text)
	}
	return out
}

// statement reads one statement starting at pos: the tokens up to ';', a
// newline or a block. When a '{' follows the statement's first words of a
// table or chain or other declaration, the block's tokens are returned
// separately; inside a rule, braces are an anonymous set and stay in the
// statement. It returns the position after the statement.
func statement(toks []nftToken, pos int, decl bool) (stmt, block []nftToken, next int, err error) {
	for pos < len(toks) {
		t := toks[pos]
		switch t.text {
		case "\n", ";":
			return stmt, nil, pos + 1, nil
		case "}":
			return nil, nil, pos, fmt.Errorf("line %d: unbalanced '}'", t.line)
		case "{":
			end, err := matchBrace(toks, pos)
			if err != nil {
				return nil, nil, pos, err
			}
			if decl && len(stmt) > 0 && isDeclaration(stmt[0].text) {
				return stmt, toks[pos+1 : end], end + 1, nil
			}
			// An anonymous set: keep its elements, drop the newlines.
			for _, in := range toks[pos : end+1] {
				if in.text != "\n" {
					stmt = append(stmt, in)
				}
			}
			pos = end + 1
		default:
			stmt = append(stmt, t)
			pos++
		}
	}
	return stmt, nil, pos, nil
}

func isDeclaration(w string) bool {
	switch w {
	case "table", "chain", "set", "map", "flowtable", "counter", "quota", "limit", "ct", "secmark", "synproxy", "add", "create":
		return true
	}
	return false
}

// matchBrace returns the index of the '}' closing the '{' at pos.
func matchBrace(toks []nftToken, pos int) (int, error) {
	depth := 0
	for i := pos; i < len(toks); i++ {
		switch toks[i].text {
		case "{":
			depth++
			if depth > maxNestDepth {
				return 0, fmt.Errorf("line %d: braces nested deeper than %d", toks[i].line, maxNestDepth)
			}
		case "}":
			depth--
			if depth == 0 {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("line %d: unclosed '{'", toks[pos].line)
}
