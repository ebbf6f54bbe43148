package network

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/scan"
)

// netnsRuleset drops by default and admits through a named interval set
// reached by a jump, an anonymous set, a goto and a plain port; a chain no
// rule jumps to opens nothing, and a drop ahead of an accept wins.
const netnsRuleset = `table inet filter {
	set allowed {
		type inet_service
		flags interval
		elements = { 22, 8000-8002 }
	}
	chain services {
		tcp dport 8001 drop
		tcp dport @allowed accept
		udp dport { 53, 123 } accept
	}
	chain web {
		tcp dport { 80, 443 } accept
	}
	chain unused {
		tcp dport 7777 accept
	}
	chain input {
		type filter hook input priority filter; policy drop;
		ct state vmap { established : accept, related : accept, invalid : drop }
		ct state established,related accept
		iif lo accept
		jump services
		tcp dport 9090 counter accept
		meta l4proto tcp goto web
		tcp dport 9999 accept
	}
}
`

// loadNetns creates a network namespace, loads ruleset into it with nft
// and returns the namespace's file and the nft command prefix.
func loadNetns(t *testing.T, ruleset string) (netns string, nft []string) {
	t.Helper()
	prefix := testutil.Netns(t)
	nftPath := testutil.Tool(t, "nft", "nftables")
	file := filepath.Join(t.TempDir(), "ruleset.nft")
	if err := os.WriteFile(file, []byte(ruleset), 0o644); err != nil {
		t.Fatal(err)
	}
	nft = append(slices.Clone(prefix), nftPath)
	testutil.Run(t, 30*time.Second, nft[0], append(nft[1:], "-f", file)...)
	return "/run/netns/" + prefix[len(prefix)-1], nft
}

func TestNftKernelRulesetInNetns(t *testing.T) {
	netns, nft := loadNetns(t, netnsRuleset)
	want := []int{22, 53, 80, 123, 443, 8000, 8002, 9090}

	kernel, file := kernelAndFile(t, netns, netnsRuleset)
	listed := nftJSONPorts(t, testutil.Run(t, 30*time.Second, nft[0], append(nft[1:], "-j", "list", "ruleset")...))
	for name, got := range map[string][]int{"kernel": kernel.ports, "file": file.ports, "nft -j": listed} {
		if !equalInts(got, want) {
			t.Errorf("%s: accepted ports %v, want %v", name, got, want)
		}
	}
	if kernel.policy != "drop" || file.policy != "drop" {
		t.Errorf("policy kernel %q file %q, want drop", kernel.policy, file.policy)
	}
	if len(kernel.unknown) != 0 || len(file.unknown) != 0 {
		t.Errorf("unmodeled rules: kernel %+v, file %+v", kernel.unknown, file.unknown)
	}
	// The rule that admits 8000 is the set lookup in the chain jumped to.
	if a := admitOf(kernel.admits, "tcp", 8000); !strings.HasPrefix(a, "inet filter services handle ") || !strings.Contains(a, "@allowed accept") {
		t.Errorf("8000 admitted by %q, want the @allowed rule of services", a)
	}
	if a := admitOf(kernel.admits, "tcp", 443); !strings.HasPrefix(a, "inet filter web handle ") {
		t.Errorf("443 admitted by %q, want the web chain reached by goto", a)
	}
	// What nft prints back is also a file the parser must read the same.
	text := testutil.Run(t, 30*time.Second, nft[0], append(nft[1:], "list", "ruleset")...)
	if back, err := parseNftVerdict([]byte(text)); err != nil || !equalInts(back.ports, want) {
		t.Errorf("nft list ruleset parsed back: %v %v\n%s", back.ports, err, text)
	}
}

// kernelAndFile evaluates the namespace's ruleset read from the kernel and
// the text it was loaded from.
func kernelAndFile(t *testing.T, netns, text string) (kernel, file fwVerdict) {
	t.Helper()
	rs, err := readKernelRuleset(netns)
	if err != nil {
		t.Fatal(err)
	}
	if kernel, err = rs.verdict(); err != nil {
		t.Fatal(err)
	}
	if file, err = parseNftVerdict([]byte(text)); err != nil {
		t.Fatal(err)
	}
	return kernel, file
}

func admitOf(admits []facts.FirewallAdmit, proto string, port int) string {
	for _, a := range admits {
		if a.Proto == proto && a.From <= port && port <= a.To {
			return a.Rule
		}
	}
	return ""
}

// nftJSONPorts computes the accepted ports from nft's own JSON listing, for
// the shapes netnsRuleset uses: it follows jumps and gotos from the input
// base chain and applies drops that come before accepts.
func nftJSONPorts(t *testing.T, out string) []int {
	t.Helper()
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("nft -j: %v\n%s", err, out)
	}
	type rule struct{ Expr []map[string]json.RawMessage }
	rules := map[string][]rule{}
	sets := map[string][]any{}
	base := ""
	for _, o := range doc.Nftables {
		if raw, ok := o["chain"]; ok {
			var c struct{ Name, Hook string }
			mustJSON(t, raw, &c)
			if c.Hook == "input" {
				base = c.Name
			}
		}
		if raw, ok := o["set"]; ok {
			var s struct {
				Name string
				Elem []any
			}
			mustJSON(t, raw, &s)
			sets[s.Name] = s.Elem
		}
		if raw, ok := o["rule"]; ok {
			var r struct {
				Chain string
				Expr  []map[string]json.RawMessage
			}
			mustJSON(t, raw, &r)
			rules[r.Chain] = append(rules[r.Chain], rule{r.Expr})
		}
	}
	var accepted, decided portSet
	var walk func(chain string, depth int)
	walk = func(chain string, depth int) {
		if depth > 8 {
			t.Fatalf("jump loop at %s", chain)
		}
		for _, r := range rules[chain] {
			var ports *portSet
			verdict, target := "", ""
			for _, e := range r.Expr {
				if raw, ok := e["match"]; ok {
					var m struct {
						Left  map[string]map[string]string
						Right any
					}
					mustJSON(t, raw, &m)
					if m.Left["payload"]["field"] == "dport" {
						ports = jsonPorts(m.Right, sets)
					} else if _, isCt := m.Left["ct"]; isCt {
						verdict = "skip"
					} else if _, isMeta := m.Left["meta"]; isMeta && m.Left["meta"]["key"] == "iif" {
						verdict = "skip"
					}
				}
				for _, v := range []string{"accept", "drop", "jump", "goto"} {
					raw, ok := e[v]
					if !ok || verdict == "skip" {
						continue
					}
					verdict = v
					if v == "jump" || v == "goto" {
						var j struct{ Target string }
						mustJSON(t, raw, &j)
						target = j.Target
					}
				}
			}
			if verdict == "skip" {
				continue
			}
			if ports == nil {
				ports = &portSet{}
				ports.fill()
			}
			fresh := *ports
			fresh.andNot(&decided)
			switch verdict {
			case "accept":
				accepted.or(&fresh)
				decided.or(&fresh)
			case "drop":
				decided.or(&fresh)
			case "jump":
				walk(target, depth+1)
			case "goto":
				walk(target, depth+1)
				decided.or(&fresh)
			}
		}
	}
	if base == "" {
		t.Fatal("nft -j lists no input chain")
	}
	walk(base, 0)
	return accepted.list()
}

func jsonPorts(v any, sets map[string][]any) *portSet {
	var ps portSet
	var add func(v any)
	add = func(v any) {
		switch v := v.(type) {
		case float64:
			ps.add(int(v), int(v))
		case string:
			for _, e := range sets[strings.TrimPrefix(v, "@")] {
				add(e)
			}
		case map[string]any:
			if r, ok := v["range"].([]any); ok && len(r) == 2 {
				ps.add(int(r[0].(float64)), int(r[1].(float64)))
			}
			if s, ok := v["set"].([]any); ok {
				for _, e := range s {
					add(e)
				}
			}
		}
	}
	add(v)
	return &ps
}

func mustJSON(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
}

// liveFirewallFacts runs the firewall collector as a live scan of the
// namespace would, with /etc/nftables.conf holding conf, and the same tree
// scanned offline. The tree has no /run/systemd/system, so the unit state
// comes from the collector's own answer for a host without systemd.
func liveFirewallFacts(t *testing.T, netns, conf string) (live, offline *facts.Facts) {
	t.Helper()
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"etc/nftables.conf": conf,
		"etc/systemd/system/multi-user.target.wants/nftables.service": collecttest.Symlink("/lib/systemd/system/nftables.service"),
	})
	env := collecttest.NewEnv(t, dir, true)
	env.NetNS, env.UnitState = netns, nil
	live = newDoc(facts.KindHost)
	gather(t, env, live, "network", "firewall")
	offline = newDoc(facts.KindRootfs)
	gather(t, collecttest.NewEnv(t, dir, false), offline, "network", "firewall")
	for _, f := range []*facts.Facts{live, offline} {
		wantStatus(t, f, "firewall", collect.StatusOK)
	}
	return live, offline
}

func TestNftCollectorLiveInNetns(t *testing.T) {
	netns, _ := loadNetns(t, netnsRuleset)
	live, offline := liveFirewallFacts(t, netns, netnsRuleset)
	want := []int{22, 53, 80, 123, 443, 8000, 8002, 9090}
	fw, off := live.Network.Firewall, offline.Network.Firewall
	if fw.Source != "kernel" || fw.KernelError != "" || fw.DefaultInputPolicy != "drop" || !equalInts(fw.AllowedPorts, want) {
		t.Errorf("live firewall %+v; want the kernel's drop policy and %v", fw, want)
	}
	if off.Source != "file" || off.Path != "/etc/nftables.conf" || !equalInts(off.AllowedPorts, want) || !off.Enabled {
		t.Errorf("offline firewall %+v; want the file's %v, enabled by its wants link", off, want)
	}
	// No systemd runs in the test's tree: the wants link does not make
	// the live firewall enabled, and the facts say why.
	if fw.Enabled || fw.Unit == nil || fw.Unit.State != "unknown" || !strings.Contains(fw.Unit.Reason, "systemd is not running") {
		t.Errorf("live enabled %v unit %+v; want unknown because systemd is not running", fw.Enabled, fw.Unit)
	}
	if err := facts.Validate(*live); err != nil {
		t.Errorf("live facts: %v", err)
	}
}

// acceptRuleset leaves the input policy at accept: a rule for ssh changes
// nothing, every port is open.
const acceptRuleset = `table inet filter {
	chain input {
		type filter hook input priority filter; policy accept;
		tcp dport 22 accept
	}
}
`

func TestNftPolicyAcceptFailsNet003(t *testing.T) {
	netns, _ := loadNetns(t, acceptRuleset)
	live, _ := liveFirewallFacts(t, netns, acceptRuleset)
	if fw := live.Network.Firewall; fw.DefaultInputPolicy != "accept" || fw.Source != "kernel" {
		t.Fatalf("firewall %+v; want the kernel's accept policy", fw)
	}
	r := evaluatePack(t, live)["GH-NET-003"]
	if r.Status != "fail" || !slices.Contains(r.Messages, "the nftables firewall's input policy is accept: every port is open") {
		t.Errorf("GH-NET-003 %s %q; want a failure for the accept policy", r.Status, r.Messages)
	}
}

// joinRuleset admits 8080 through a named set behind a jump and drops
// everything else but ssh.
const joinRuleset = `table inet filter {
	set web { type inet_service; elements = { 8080 } }
	chain services {
		tcp dport @web accept
	}
	chain input {
		type filter hook input priority filter; policy drop;
		iif lo accept
		tcp dport 22 accept
		jump services
	}
}
`

func TestNftJoinFailsAdmittedListener(t *testing.T) {
	netns, nft := loadNetns(t, joinRuleset)
	py := testutil.Tool(t, "python3", "python3")
	inNetns := nft[:len(nft)-1]
	// One listener the ruleset admits and one it drops, both inside the
	// namespace; the host's /proc/net cannot see them, their own can.
	var listening []facts.Listener
	for _, port := range []int{8080, 8443} {
		p := testutil.Start(t, exec.Command(inNetns[0], append(slices.Clone(inNetns[1:]), py, "-m", "http.server", "--bind", "0.0.0.0", strconv.Itoa(port))...))
		var l facts.Listener
		p.WaitFor(t, 20*time.Second, fmt.Sprintf("a listener on %d", port), func() bool {
			l = procListener(t, p.Cmd.Process.Pid, port)
			return l.Port == port
		})
		listening = append(listening, l)
	}
	live, _ := liveFirewallFacts(t, netns, joinRuleset)
	live.Network.Listening = listening
	live.Record("network", collect.StatusOK, "")
	results := evaluatePack(t, live)
	r := results["GH-NET-004"]
	if r.Status != "fail" || len(r.Messages) != 1 {
		t.Fatalf("GH-NET-004 %s %q; want one failure for 8080", r.Status, r.Messages)
	}
	msg := r.Messages[0]
	for _, want := range []string{"tcp 0.0.0.0 port 8080 (python3)", "inet filter services handle ", "tcp dport @web accept"} {
		if !strings.Contains(msg, want) {
			t.Errorf("GH-NET-004 message %q lacks %q", msg, want)
		}
	}
	// 8443 is dropped: not reachable, so only GH-NET-001 names it.
	if r := results["GH-NET-001"]; r.Status != "fail" || !strings.Contains(strings.Join(r.Messages, "|"), "port 8443") {
		t.Errorf("GH-NET-001 %s %q; want 8443 reported as listening", r.Status, r.Messages)
	}
	// Without systemd in the scanned tree, whether the unit is active is
	// not known, and GH-NET-002 says so instead of passing or failing.
	if r := results["GH-NET-002"]; r.Status != "error" || !strings.Contains(strings.Join(r.Messages, "|"), "systemd is not running") {
		t.Errorf("GH-NET-002 %s %q; want an error: systemd is not running", r.Status, r.Messages)
	}
}

// procListener finds the socket listening on port in the network namespace
// of pid, through /proc/PID/net/tcp and tcp6, and names its process.
func procListener(t *testing.T, pid, port int) facts.Listener {
	t.Helper()
	for _, proto := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, proto))
		if err != nil {
			continue
		}
		socks, err := parseProcNet(data, proto, "0A")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range socks {
			if int(s.Port) == port {
				comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
				return facts.Listener{Proto: proto, Address: s.Addr.String(), Port: port, Process: strings.TrimSpace(string(comm)), PID: pid}
			}
		}
	}
	return facts.Listener{}
}

type packResult struct {
	Status   string
	Messages []string
}

// evaluatePack scans f with the default pack and params, as "gpuhost
// scan facts" does.
func evaluatePack(t testing.TB, f *facts.Facts) map[string]packResult {
	t.Helper()
	ctx := context.Background()
	e, err := scan.Pack{}.Engine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := scan.New(e).Facts(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]packResult{}
	for _, r := range rep.Results {
		out[r.ID] = packResult{Status: r.Status, Messages: r.Messages}
	}
	return out
}

// unmodeledRuleset holds conditions the model does not evaluate: source
// addresses, a fib lookup and a verdict map on ports.
const unmodeledRuleset = `table inet filter {
	chain input {
		type filter hook input priority filter; policy drop;
		ip saddr 192.0.2.0/24 drop
		ip saddr 10.0.0.0/8 tcp dport 5432 accept
		ip saddr 10.1.0.0/16 accept
		fib daddr type broadcast drop
		tcp dport vmap { 8443 : accept }
		tcp dport 22 accept
	}
}
`

func TestNftKernelUnmodeledRulesInNetns(t *testing.T) {
	netns, _ := loadNetns(t, unmodeledRuleset)
	kernel, file := kernelAndFile(t, netns, unmodeledRuleset)
	for name, v := range map[string]fwVerdict{"kernel": kernel, "file": file} {
		if !equalInts(v.ports, []int{22, 5432}) || v.policy != "drop" {
			t.Errorf("%s: %s %v, want drop with 22 and the source-restricted 5432", name, v.policy, v.ports)
		}
		may := 0
		for _, u := range v.unknown {
			if u.MayAccept {
				may++
				if !strings.Contains(u.Rule, "accept") && !strings.Contains(u.Reason, "map") {
					t.Errorf("%s: %+v may accept but is no accept rule", name, u)
				}
			}
		}
		if len(v.unknown) != 5 || may != 2 {
			t.Errorf("%s: unmodeled %+v, want 5 rules of which 2 may accept", name, v.unknown)
		}
	}
}

// largeRuleset has chains input and c0..c(n-1): input jumps to each, and
// each holds rules accepting ports from a named set and single ports.
func largeRuleset(chains, rulesPerChain int) string {
	var b strings.Builder
	b.WriteString("table inet filter {\n\tset many { type inet_service; flags interval; elements = { ")
	for i := 0; i < 1000; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d", 20000+2*i)
	}
	b.WriteString(" } }\n")
	for c := 0; c < chains; c++ {
		fmt.Fprintf(&b, "\tchain c%d {\n\t\ttcp dport @many accept\n", c)
		for r := 0; r < rulesPerChain; r++ {
			fmt.Fprintf(&b, "\t\ttcp dport %d accept\n", 1000+c*rulesPerChain+r)
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("\tchain input {\n\t\ttype filter hook input priority filter; policy drop;\n")
	for c := 0; c < chains; c++ {
		fmt.Fprintf(&b, "\t\tjump c%d\n", c)
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// BenchmarkNftKernelRead reads and evaluates 5,050 rules and a 1,000-element
// set from a namespace's kernel; BenchmarkNftFileParse parses the same text.
func BenchmarkNftKernelRead(b *testing.B) {
	text := largeRuleset(50, 100)
	prefix := testutil.Netns(b)
	nftPath := testutil.Tool(b, "nft", "nftables")
	file := filepath.Join(b.TempDir(), "large.nft")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	testutil.Run(b, 60*time.Second, prefix[0], append(slices.Clone(prefix[1:]), nftPath, "-f", file)...)
	netns := "/run/netns/" + prefix[len(prefix)-1]
	for b.Loop() {
		rs, err := readKernelRuleset(netns)
		if err != nil {
			b.Fatal(err)
		}
		if v, err := rs.verdict(); err != nil || len(v.ports) != 6000 {
			b.Fatalf("%d ports, %v", len(v.ports), err)
		}
	}
}

func BenchmarkNftFileParse(b *testing.B) {
	text := []byte(largeRuleset(50, 100))
	for b.Loop() {
		if v, err := parseNftVerdict(text); err != nil || len(v.ports) != 6000 {
			b.Fatalf("%d ports, %v", len(v.ports), err)
		}
	}
}

// ufwRules is what ufw loads through iptables-nft, cut down: the kernel
// holds it in table ip filter, where gpuhost reads it like any ruleset.
const ufwRules = `*filter
:INPUT DROP [0:0]
:FORWARD DROP [0:0]
:OUTPUT ACCEPT [0:0]
:ufw-user-input - [0:0]
-A INPUT -i lo -j ACCEPT
-A INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A INPUT -j ufw-user-input
-A ufw-user-input -p tcp --dport 22 -j ACCEPT
-A ufw-user-input -p udp --dport 60000:60002 -j ACCEPT
-A ufw-user-input -p tcp -m multiport --dports 80,443,8000:8002 -j ACCEPT
COMMIT
`

func TestNftKernelReadsIptablesNft(t *testing.T) {
	v, netns := restoredVerdict(t, ufwRules)
	want := []int{22, 80, 443, 8000, 8001, 8002, 60000, 60001, 60002}
	if v.policy != "drop" || !equalInts(v.ports, want) || len(v.unknown) != 0 {
		t.Errorf("kernel: %s %v %+v, want drop with %v and nothing unmodeled", v.policy, v.ports, v.unknown, want)
	}
	if a := admitOf(v.admits, "tcp", 443); !strings.HasPrefix(a, "ip filter ufw-user-input handle ") || !strings.Contains(a, "tcp dport { 80, 443, 8000-8002 } accept") {
		t.Errorf("443 admitted by %q, want the multiport rule of ufw-user-input", a)
	}
	// An xtables match the model does not read is listed as a rule that
	// may accept, not dropped from view.
	v, _ = restoredVerdict(t, strings.Replace(ufwRules, "-A INPUT -j ufw-user-input", "-A INPUT -m addrtype --dst-type BROADCAST -j ACCEPT", 1))
	if len(v.unknown) != 1 || !v.unknown[0].MayAccept || !strings.Contains(v.unknown[0].Reason, "addrtype") {
		t.Errorf("unmodeled %+v, want the addrtype rule, which may accept", v.unknown)
	}
	// A host with ufw enabled: live, the kernel's rules under ufw's name
	// and unit; offline, ufw's own files, which hold the same rules.
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"etc/ufw/ufw.conf":   "ENABLED=yes\n",
		"etc/default/ufw":    "DEFAULT_INPUT_POLICY=\"DROP\"\n",
		"etc/ufw/user.rules": ufwRules,
	})
	env := collecttest.NewEnv(t, dir, true)
	env.NetNS, env.UnitState = netns, nil
	live := newDoc(facts.KindHost)
	gather(t, env, live, "network", "firewall")
	offline := newDoc(facts.KindRootfs)
	gather(t, collecttest.NewEnv(t, dir, false), offline, "network", "firewall")
	fw, off := live.Network.Firewall, offline.Network.Firewall
	if fw.Backend != "ufw" || fw.Source != "kernel" || !equalInts(fw.AllowedPorts, want) || fw.Unit == nil || fw.Unit.Name != "ufw.service" || fw.Unit.State != "unknown" {
		t.Errorf("live %+v unit %+v; want ufw's rules from the kernel and ufw.service unknown", fw, fw.Unit)
	}
	if off.Backend != "ufw" || off.Source != "file" || !off.Enabled || !equalInts(off.AllowedPorts, want) {
		t.Errorf("offline %+v; want ufw's files, enabled, with %v", off, want)
	}
}

// dockerRules publish ports the way Docker's iptables backend does, with
// iptables-nft: xtables DNAT and REDIRECT targets in the nat table, and a
// FORWARD policy of drop that a conntrack rule and an accept to the
// container open.
const dockerRules = `*nat
:PREROUTING ACCEPT [0:0]
:DOCKER - [0:0]
-A PREROUTING -m addrtype --dst-type LOCAL -j DOCKER
-A DOCKER -p tcp -m tcp --dport 8080 -j DNAT --to-destination 172.17.0.2:80
-A DOCKER -p tcp -m tcp --dport 2222 -j REDIRECT --to-ports 22
COMMIT
*filter
:INPUT DROP [0:0]
:FORWARD DROP [0:0]
-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT
-A FORWARD -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A FORWARD -d 172.17.0.2/32 -p tcp -m tcp --dport 80 -j ACCEPT
COMMIT
`

// Docker's published ports, read from the kernel as iptables-nft leaves
// them: the xtables DNAT and REDIRECT targets are where the ports go.
func TestNftKernelReadsDockerDNAT(t *testing.T) {
	v, _ := restoredVerdict(t, dockerRules)
	var got []string
	for _, p := range v.families[0].published {
		got = append(got, fmt.Sprintf("%s %d-%d>%s:%d %v %v", p.Proto, p.From, p.To, p.ToAddress, p.ToPort, p.Admitted, p.Partial))
	}
	// The addrtype match ahead of the DOCKER chain holds for every
	// connection to the host, so the moves are whole.
	want := []string{"tcp 8080-8080>172.17.0.2:80 true false", "tcp 2222-2222>:22 true false"}
	if !slices.Equal(got, want) {
		t.Errorf("IPv4 publishes %q, want %q (unmodeled %+v)", got, want, v.unknown)
	}
	// Negated, or on the source, addrtype is not modeled: the moves
	// become partial, and the ports may be reached as they are.
	v, _ = restoredVerdict(t, strings.Replace(dockerRules, "-m addrtype --dst-type LOCAL", "-m addrtype ! --dst-type LOCAL", 1))
	for _, p := range v.families[0].published {
		if !p.Partial {
			t.Errorf("%+v is whole behind a negated addrtype match", p)
		}
	}
}

// restoredVerdict loads iptables rules with iptables-nft-restore into a
// network namespace of its own and evaluates the ruleset the kernel holds
// there; it returns the namespace too, for a collector to read.
func restoredVerdict(t *testing.T, rules string) (fwVerdict, string) {
	t.Helper()
	prefix := testutil.Netns(t)
	restore := testutil.Tool(t, "iptables-nft-restore", "iptables")
	cmd := exec.Command(prefix[0], append(slices.Clone(prefix[1:]), restore)...)
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("iptables-nft-restore: %v\n%s", err, out)
	}
	netns := "/run/netns/" + prefix[len(prefix)-1]
	rs, err := readKernelRuleset(netns)
	if err != nil {
		t.Fatal(err)
	}
	v, err := rs.verdict()
	if err != nil {
		t.Fatal(err)
	}
	return v, netns
}
