package network

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/osinfo"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// maxIncludeDepth and maxIncludeFiles bound nftables include chains.
	maxIncludeDepth = 8
	maxIncludeFiles = 64
	// maxNestDepth bounds brace nesting in an nftables file.
	maxNestDepth = 32
)

// CollectFirewall reads the firewall into net, the listeners'
// facts (nil when there are none), and returns it. Offline it is the
// configuration; on a live host it is the ruleset the kernel holds, read
// over netlink, and "enabled" is whether the unit that loads it is active.
// When the kernel cannot be read (no CAP_NET_ADMIN), the configuration
// stands in and the facts say why. On an offline rootfs there are no
// listeners to list, so the Network it creates holds only the firewall and
// a nil Listening.
func CollectFirewall(ctx context.Context, env *collect.Env, net *facts.Network) (*facts.Network, error) {
	fw, err := readFirewall(env.FS)
	if err != nil {
		return nil, err
	}
	if env.Live {
		if fw, err = liveFirewall(ctx, env, fw); err != nil {
			return nil, err
		}
		fw.IPv6 = liveIPv6(env)
	}
	joinFamilies(fw)
	fw.AllowedPortRanges = portRuns(fw.AllowedPorts)
	for i := range fw.Families {
		fw.Families[i].AllowedPortRanges = portRuns(fw.Families[i].AllowedPorts)
	}
	if net == nil {
		net = &facts.Network{}
		if env.Live {
			net.Listening = []facts.Listener{}
		}
	}
	net.Firewall = fw
	return net, nil
}

// liveFirewall replaces the configured ruleset with the kernel's and asks
// systemd whether the firewall's unit is active.
func liveFirewall(ctx context.Context, env *collect.Env, conf *facts.Firewall) (*facts.Firewall, error) {
	fw := conf
	rs, err := readKernelRuleset(env.NetNS)
	if err != nil {
		fw.KernelError = err.Error()
	} else {
		v, err := rs.verdict()
		if err != nil {
			return nil, fmt.Errorf("evaluating the kernel's nftables ruleset: %w", err)
		}
		backend := conf.Backend
		if backend == "none" && (v.hasInput || v.publishes()) {
			backend = "nftables"
		}
		fw = v.firewall(backend, "kernel")
		fw.Path = conf.Path
	}
	unit := "nftables.service"
	if conf.Backend == "ufw" {
		unit = "ufw.service"
	}
	if conf.Backend == "none" && fw.Backend == "none" {
		return fw, nil
	}
	state, reason := osinfo.UnitActiveState(ctx, env, unit)
	fw.Unit = &facts.UnitState{Name: unit, State: state, Reason: reason}
	fw.Enabled = state == "active"
	return fw, nil
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
	none := &facts.Firewall{Backend: "none", DefaultInputPolicy: "accept", AllowedPorts: []int{}, Source: "file"}
	for _, fam := range nftFamilies {
		none.Families = append(none.Families, facts.FirewallFamily{Family: fam.name, DefaultInputPolicy: "accept", AllowedPorts: []int{}, Source: "file"})
	}
	return none, nil
}

// joinFamilies settles the joined DefaultInputPolicy from the families the
// host has on, so that a reader of the joined fields alone sees an open
// family as an open firewall: "accept" when one of them is unfiltered or
// accepts by policy, else the strictest of their policies. IPv6 counts
// unless the facts show it off. The joined PolicyLocation is that of the
// family that decided.
func joinFamilies(fw *facts.Firewall) {
	if len(fw.Families) == 0 {
		return
	}
	ipv6On := fw.IPv6 == nil || fw.IPv6.Enabled
	joined := ""
	var at *collect.FileLine
	for _, f := range fw.Families {
		if f.Family == "ipv6" && !ipv6On {
			continue
		}
		p := strings.ToLower(f.DefaultInputPolicy)
		if !f.Filtered || p == "accept" {
			fw.DefaultInputPolicy, fw.PolicyLocation = "accept", f.PolicyLocation
			return
		}
		if joined == "" || policyRank(p) > policyRank(joined) {
			joined, at = p, f.PolicyLocation
		}
	}
	if joined != "" {
		fw.DefaultInputPolicy, fw.PolicyLocation = joined, at
	}
}

// portRuns returns sorted ports as runs of consecutive ports.
func portRuns(ports []int) []facts.PortRange {
	var runs []facts.PortRange
	for _, p := range slices.Compact(slices.Sorted(slices.Values(ports))) {
		if n := len(runs); n > 0 && runs[n-1].To+1 == p {
			runs[n-1].To = p
			continue
		}
		runs = append(runs, facts.PortRange{From: p, To: p})
	}
	return runs
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
	data, ok, err := textfile.ReadOptional(fsys, conf)
	if err != nil {
		return nil, fmt.Errorf("reading ufw config: %w", err)
	}
	if !ok {
		return nil, nil
	}
	vars := map[string]string{}
	if _, err := textfile.ParseShell(data, vars, false); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", fsys.Display(conf), err)
	}
	fw := &facts.Firewall{
		Backend:            "ufw",
		Enabled:            strings.EqualFold(vars["ENABLED"], "yes"),
		DefaultInputPolicy: "drop",
		Source:             "file",
		Path:               conf,
	}
	ipv6 := false
	data, ok, err = textfile.ReadOptional(fsys, defaults)
	if err != nil {
		return nil, fmt.Errorf("reading ufw defaults: %w", err)
	}
	if ok {
		dv := map[string]string{}
		if _, err := textfile.ParseShell(data, dv, false); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", fsys.Display(defaults), err)
		}
		if p := strings.ToLower(dv["DEFAULT_INPUT_POLICY"]); p != "" {
			fw.DefaultInputPolicy = p
		}
		ipv6 = strings.EqualFold(dv["IPV6"], "yes")
	}
	var all portSet
	var byFamily [2]portSet
	for i, name := range []string{"/etc/ufw/user.rules", "/etc/ufw/user6.rules"} {
		data, ok, err := textfile.ReadOptional(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("reading ufw rules: %w", err)
		}
		if !ok {
			continue
		}
		if err := parseUfwRules(data, &byFamily[i]); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", fsys.Display(name), err)
		}
		all.or(&byFamily[i])
	}
	fw.AllowedPorts = all.list()
	// ufw keeps IPv4 rules in user.rules and IPv6 rules in user6.rules.
	// Unless IPV6=yes it loads no IPv6 rules and accepts IPv6 only on the
	// loopback, as its own /etc/default/ufw says.
	for i, fam := range nftFamilies {
		f := facts.FirewallFamily{Family: fam.name, Filtered: true, DefaultInputPolicy: fw.DefaultInputPolicy,
			AllowedPorts: byFamily[i].list(), Source: "file"}
		if fam.name == "ipv6" && !ipv6 {
			f.DefaultInputPolicy, f.AllowedPorts = "drop", []int{}
		}
		fw.Families = append(fw.Families, f)
	}
	return fw, nil
}

// parseUfwRules reads ufw's user rules: both the "### tuple ###" comments
// ufw keeps as its own record and the iptables-restore lines it loads. Only
// incoming allow and limit rules with a destination port count; a rule
// without a port (allow from a network) opens no specific port and is not
// represented.
func parseUfwRules(data []byte, ports *portSet) error {
	for i, l := range textfile.Lines(data) {
		if err := textfile.CheckLine([]byte(l)); err != nil {
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

func policyRank(p string) int {
	switch p {
	case "drop":
		return 2
	case "reject":
		return 1
	}
	return 0
}
