package network

import (
	"context"
	"errors"
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
)

// These tests hold the per-family verdict to what a host outside sees: an
// inner namespace holds the ruleset and the listeners, an outer one joined
// to it by a veth pair plays the network, and a TCP connect from there over
// IPv4 and IPv6 must agree with the facts and with GH-NET-004.

const (
	innerIPv4 = "10.29.0.2"
	innerIPv6 = "fd29::2"
	// webPort is the listener no rule admits and allowed_ports leaves out;
	// sshPort is admitted everywhere and serves as the connect's control.
	webPort = 8080
	sshPort = 22
)

// ipOnlyRuleset filters IPv4 alone: the first measurement.
const ipOnlyRuleset = `table ip filter {
	chain input {
		type filter hook input priority filter; policy drop;
		ct state established,related accept
		iif lo accept
		tcp dport 22 accept
	}
}
`

// iptablesIPv4 is what iptables-nft-restore loads for IPv4 with no
// ip6tables counterpart: the second measurement.
const iptablesIPv4 = `*filter
:INPUT DROP [0:0]
:FORWARD DROP [0:0]
:OUTPUT ACCEPT [0:0]
-A INPUT -i lo -j ACCEPT
-A INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A INPUT -p tcp --dport 22 -j ACCEPT
COMMIT
`

// inetRuleset filters both families; neighbour discovery stays open so
// that a closed IPv6 port is closed by the port rules, not by a missing
// neighbour.
const inetRuleset = `table inet filter {
	chain input {
		type filter hook input priority filter; policy drop;
		ct state established,related accept
		iif lo accept
		meta l4proto ipv6-icmp accept
		tcp dport 22 accept
	}
}
`

// pairedNetns is an inner namespace, where the ruleset and the listeners
// live, and an outer one that reaches it over a veth pair on both families.
type pairedNetns struct {
	inner, outer string
	in           []string // command prefix running in the inner namespace
}

func (p pairedNetns) innerFile() string { return "/run/netns/" + p.inner }

func newPairedNetns(t *testing.T) pairedNetns {
	t.Helper()
	in, out := testutil.Netns(t), testutil.Netns(t)
	p := pairedNetns{inner: in[len(in)-1], outer: out[len(out)-1], in: in}
	ip := testutil.Tool(t, "ip", "iproute2")
	// The pair is made inside the inner namespace with its peer sent to
	// the outer one: nothing is added to the test machine's own.
	for _, args := range [][]string{
		{"-n", p.inner, "link", "add", "vin", "type", "veth", "peer", "name", "vout", "netns", p.outer},
		{"-n", p.inner, "addr", "add", innerIPv4 + "/24", "dev", "vin"},
		{"-n", p.inner, "addr", "add", innerIPv6 + "/64", "dev", "vin", "nodad"},
		{"-n", p.inner, "link", "set", "vin", "up"},
		{"-n", p.outer, "addr", "add", "10.29.0.1/24", "dev", "vout"},
		{"-n", p.outer, "addr", "add", "fd29::1/64", "dev", "vout", "nodad"},
		{"-n", p.outer, "link", "set", "vout", "up"},
	} {
		testutil.Run(t, 10*time.Second, ip, args...)
	}
	return p
}

// nft runs nft in the inner namespace.
func (p pairedNetns) nft(t *testing.T, args ...string) string {
	t.Helper()
	nft := testutil.Tool(t, "nft", "nftables")
	return testutil.Run(t, 30*time.Second, p.in[0], append(slices.Clone(p.in[1:]), append([]string{nft}, args...)...)...)
}

func (p pairedNetns) loadNft(t *testing.T, ruleset string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "ruleset.nft")
	if err := os.WriteFile(file, []byte(ruleset), 0o644); err != nil {
		t.Fatal(err)
	}
	p.nft(t, "-f", file)
}

// listen starts an HTTP server on :: in the inner namespace, which takes
// IPv4 too (Python's server clears IPV6_V6ONLY), and returns its listener
// as the network collector would name it.
func (p pairedNetns) listen(t *testing.T, port int) facts.Listener {
	t.Helper()
	py := testutil.Tool(t, "python3", "python3")
	proc := testutil.Start(t, exec.Command(p.in[0], append(slices.Clone(p.in[1:]), py, "-m", "http.server", "--bind", "::", strconv.Itoa(port))...))
	var l facts.Listener
	proc.WaitFor(t, 20*time.Second, fmt.Sprintf("a listener on %d", port), func() bool {
		l = procListener(t, proc.Cmd.Process.Pid, port)
		return l.Port == port
	})
	return l
}

// connects reports whether a TCP connect from the outer namespace reaches
// addr. A dropped SYN shows as the timeout.
func (p pairedNetns) connects(t *testing.T, addr string) (bool, error) {
	t.Helper()
	ok, err := p.reaches(addr, 1500*time.Millisecond)
	if errors.Is(err, testutil.ErrNetns) {
		t.Fatal(err)
	}
	return ok, err
}

// reaches is connects for any goroutine: a namespace that cannot be
// entered is returned as an error wrapping testutil.ErrNetns.
func (p pairedNetns) reaches(addr string, timeout time.Duration) (bool, error) {
	conn, err := testutil.DialNetnsWithin(p.outer, "tcp", addr, timeout)
	if conn != nil {
		conn.Close()
	}
	return err == nil, err
}

// scan collects the inner namespace's firewall as a live scan would, with
// the given listeners and nftables.service active, and evaluates the pack.
func (p pairedNetns) scan(t *testing.T, listening []facts.Listener) (*facts.Firewall, map[string]packResult) {
	t.Helper()
	live := p.liveDoc(t, listening)
	return live.Network.Firewall, evaluatePack(t, live)
}

// liveDoc is the facts document of a live scan of the inner namespace's
// firewall, with the given listeners and nftables.service active.
func (p pairedNetns) liveDoc(t *testing.T, listening []facts.Listener) *facts.Facts {
	t.Helper()
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{"etc/": nil})
	env := collecttest.NewEnv(t, dir, true)
	env.NetNS = p.innerFile()
	env.UnitState = func(context.Context, string) (string, string) { return "active", "" }
	live := newDoc(facts.KindHost)
	gather(t, env, live, "network", "firewall")
	wantStatus(t, live, "firewall", collect.StatusOK)
	live.Network.Listening = listening
	live.Record("network", collect.StatusOK, "")
	if err := facts.Validate(*live); err != nil {
		t.Fatalf("live facts: %v", err)
	}
	return live
}

// factsSayReachable is the facts' answer to "does a new connection to port
// reach the listener over family": IPv6 off closes it, an unfiltered family
// opens it, and otherwise the family's admitted ports and policy decide.
func factsSayReachable(t *testing.T, fw *facts.Firewall, family string, port int) bool {
	t.Helper()
	if family == "ipv6" && fw.IPv6 != nil && !fw.IPv6.Enabled {
		return false
	}
	for _, f := range fw.Families {
		if f.Family == family {
			return !f.Filtered || f.DefaultInputPolicy == "accept" || slices.Contains(f.AllowedPorts, port)
		}
	}
	t.Fatalf("no %s in the families %+v", family, fw.Families)
	return false
}

// agree connects to each port over each family and requires the facts to
// say the same; it returns what the connects showed.
func (p pairedNetns) agree(t *testing.T, fw *facts.Firewall, ports ...int) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, port := range ports {
		for family, host := range map[string]string{"ipv4": innerIPv4, "ipv6": "[" + innerIPv6 + "]"} {
			addr := host + ":" + strconv.Itoa(port)
			ok, err := p.connects(t, addr)
			seen[family+"/"+strconv.Itoa(port)] = ok
			if want := factsSayReachable(t, fw, family, port); ok != want {
				t.Errorf("%s over %s: connect %v (%v), facts say reachable %v", addr, family, ok, err, want)
			}
			t.Logf("connect %s over %s: %v (%v)", addr, family, ok, err)
		}
	}
	return seen
}

// wantOnlyIPv6Open is the verdict for a ruleset that filters IPv4 alone:
// the web port is reachable over IPv6 and nowhere else, and the checks
// name IPv6 and the port.
func wantOnlyIPv6Open(t *testing.T, p pairedNetns, fw *facts.Firewall, results map[string]packResult) {
	t.Helper()
	if fw.IPv6 == nil || !fw.IPv6.Enabled {
		t.Errorf("ipv6 %+v, want on: the inner namespace has %s", fw.IPv6, innerIPv6)
	}
	seen := p.agree(t, fw, webPort, sshPort)
	if !seen["ipv6/8080"] || seen["ipv4/8080"] || !seen["ipv4/22"] || !seen["ipv6/22"] {
		t.Errorf("connects %v; want 8080 over IPv6 alone, 22 over both", seen)
	}
	r := results["GH-NET-004"]
	want := fmt.Sprintf("tcp6 :: port %d (python3) is not in allowed_ports and is reachable over IPv6: no ip6 or inet table filters input", webPort)
	if r.Status != "fail" || !slices.Equal(r.Messages, []string{want}) {
		t.Errorf("GH-NET-004 %s %q; want one failure: %q", r.Status, r.Messages, want)
	}
	if r := results["GH-NET-002"]; r.Status != "fail" || !slices.Contains(r.Messages, "IPv6 is not filtered: no ip6 or inet table has a filter chain on the input hook, so every IPv6 port is open") {
		t.Errorf("GH-NET-002 %s %q; want IPv6 named unfiltered", r.Status, r.Messages)
	}
	if r := results["GH-NET-003"]; r.Status != "fail" || !slices.Contains(r.Messages, "every port is open over IPv6: no ip6 or inet table filters input") {
		t.Errorf("GH-NET-003 %s %q; want every IPv6 port open", r.Status, r.Messages)
	}
}

// Class 1: table ip alone.
func TestFamilyIPTableLeavesIPv6Open(t *testing.T) {
	p := newPairedNetns(t)
	p.loadNft(t, ipOnlyRuleset)
	held := p.nft(t, "list", "ruleset")
	t.Logf("nft list ruleset:\n%s", held)
	if !strings.Contains(held, "table ip filter") || strings.Contains(held, "table ip6 ") || strings.Contains(held, "table inet ") {
		t.Fatalf("the kernel holds more or less than table ip filter:\n%s", held)
	}
	listening := []facts.Listener{p.listen(t, webPort), p.listen(t, sshPort)}
	fw, results := p.scan(t, listening)
	ip, ip6 := fw.Families[0], fw.Families[1]
	if !ip.Filtered || ip.DefaultInputPolicy != "drop" || ip6.Filtered || fw.DefaultInputPolicy != "accept" {
		t.Errorf("families %+v, joined policy %s; want IPv4 dropping, IPv6 unfiltered, joined accept", fw.Families, fw.DefaultInputPolicy)
	}
	wantOnlyIPv6Open(t, p, fw, results)
}

// Class 2: iptables-nft rules for IPv4, no ip6tables rules.
func TestFamilyIptablesNftWithoutIp6tables(t *testing.T) {
	p := newPairedNetns(t)
	restore := testutil.Tool(t, "iptables-nft-restore", "iptables")
	cmd := exec.Command(p.in[0], append(slices.Clone(p.in[1:]), restore)...)
	cmd.Stdin = strings.NewReader(iptablesIPv4)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("iptables-nft-restore: %v\n%s", err, out)
	}
	held := p.nft(t, "list", "ruleset")
	t.Logf("nft list ruleset:\n%s", held)
	if !strings.Contains(held, "table ip filter") || !strings.Contains(held, "chain INPUT") || strings.Contains(held, "table ip6 ") {
		t.Fatalf("the kernel holds more or less than iptables-nft's table ip filter:\n%s", held)
	}
	listening := []facts.Listener{p.listen(t, webPort), p.listen(t, sshPort)}
	fw, results := p.scan(t, listening)
	if ip := fw.Families[0]; !slices.Equal(ip.Chains, []string{"ip filter INPUT"}) || !equalInts(ip.AllowedPorts, []int{sshPort}) {
		t.Errorf("IPv4 %+v; want iptables-nft's INPUT admitting %d", ip, sshPort)
	}
	wantOnlyIPv6Open(t, p, fw, results)
}

// Class 3: table inet with policy drop closes both families.
func TestFamilyInetDropClosesBoth(t *testing.T) {
	p := newPairedNetns(t)
	p.loadNft(t, inetRuleset)
	held := p.nft(t, "list", "ruleset")
	t.Logf("nft list ruleset:\n%s", held)
	if !strings.Contains(held, "table inet filter") {
		t.Fatalf("the kernel holds no table inet filter:\n%s", held)
	}
	listening := []facts.Listener{p.listen(t, webPort), p.listen(t, sshPort)}
	fw, results := p.scan(t, listening)
	for _, f := range fw.Families {
		if !f.Filtered || f.DefaultInputPolicy != "drop" || !equalInts(f.AllowedPorts, []int{sshPort}) {
			t.Errorf("%s %+v; want dropping all but %d", f.Family, f, sshPort)
		}
	}
	seen := p.agree(t, fw, webPort, sshPort)
	if seen["ipv4/8080"] || seen["ipv6/8080"] || !seen["ipv4/22"] || !seen["ipv6/22"] {
		t.Errorf("connects %v; want 8080 closed and 22 open over both", seen)
	}
	for _, id := range []string{"GH-NET-002", "GH-NET-003", "GH-NET-004"} {
		if r := results[id]; r.Status != "pass" {
			t.Errorf("%s %s %q; want a pass", id, r.Status, r.Messages)
		}
	}
}

// Class 4: IPv6 switched off inside the namespace.
func TestFamilyIPv6DisabledInNetns(t *testing.T) {
	p := newPairedNetns(t)
	p.loadNft(t, ipOnlyRuleset)
	sysctl := testutil.Tool(t, "sysctl", "procps")
	testutil.Run(t, 10*time.Second, p.in[0], append(slices.Clone(p.in[1:]), sysctl, "-w", "net.ipv6.conf.all.disable_ipv6=1")...)
	t.Logf("nft list ruleset:\n%s", p.nft(t, "list", "ruleset"))
	listening := []facts.Listener{p.listen(t, webPort), p.listen(t, sshPort)}
	fw, results := p.scan(t, listening)
	if fw.IPv6 == nil || fw.IPv6.Enabled || !strings.Contains(fw.IPv6.Evidence, "disable_ipv6 is 1 in every entry of /proc/sys/net/ipv6/conf") ||
		!strings.Contains(fw.IPv6.Evidence, "vin") {
		t.Errorf("ipv6 %+v; want off, on the evidence of disable_ipv6 for every entry", fw.IPv6)
	}
	if ip6 := fw.Families[1]; ip6.Filtered {
		t.Errorf("IPv6 %+v; the ruleset still has no IPv6 input hook", ip6)
	}
	if fw.DefaultInputPolicy != "drop" {
		t.Errorf("joined policy %s; want IPv4's drop, IPv6 being off", fw.DefaultInputPolicy)
	}
	seen := p.agree(t, fw, webPort, sshPort)
	if seen["ipv4/8080"] || seen["ipv6/8080"] || seen["ipv6/22"] || !seen["ipv4/22"] {
		t.Errorf("connects %v; want nothing over IPv6 and 22 alone over IPv4", seen)
	}
	for _, id := range []string{"GH-NET-002", "GH-NET-003", "GH-NET-004"} {
		if r := results[id]; r.Status != "pass" {
			t.Errorf("%s %s %q; want a pass: IPv6 is off", id, r.Status, r.Messages)
		}
	}
}

// Class 5: an image whose /etc/nftables.conf has table ip alone; the same
// file loaded into a namespace shows what the image would boot into.
func TestFamilyOfflineFileIPTableOnly(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"etc/nftables.conf": "#!/usr/sbin/nft -f\nflush ruleset\n" + ipOnlyRuleset,
		"etc/systemd/system/sysinit.target.wants/nftables.service": collecttest.Symlink("/lib/systemd/system/nftables.service"),
	})
	offline := newDoc(facts.KindRootfs)
	gather(t, collecttest.NewEnv(t, dir, false), offline, "network", "firewall")
	wantStatus(t, offline, "firewall", collect.StatusOK)
	fw := offline.Network.Firewall
	if fw.Source != "file" || fw.IPv6 != nil || len(fw.Families) != 2 || fw.Families[1].Filtered || fw.Families[1].Source != "file" || fw.DefaultInputPolicy != "accept" {
		t.Errorf("offline firewall %+v families %+v; want the file's, IPv6 unfiltered and not known off", fw, fw.Families)
	}
	if err := facts.Validate(*offline); err != nil {
		t.Fatal(err)
	}
	results := evaluatePack(t, offline)
	if r := results["GH-NET-002"]; r.Status != "fail" || !slices.Equal(r.Messages, []string{"IPv6 is not filtered: no ip6 or inet table has a filter chain on the input hook, so every IPv6 port is open"}) {
		t.Errorf("GH-NET-002 %s %q; want IPv6 named unfiltered", r.Status, r.Messages)
	}
	if r := results["GH-NET-003"]; r.Status != "fail" || !slices.Equal(r.Messages, []string{"every port is open over IPv6: no ip6 or inet table filters input"}) {
		t.Errorf("GH-NET-003 %s %q; want every IPv6 port open", r.Status, r.Messages)
	}

	p := newPairedNetns(t)
	conf, err := os.ReadFile(filepath.Join(dir, "etc/nftables.conf"))
	if err != nil {
		t.Fatal(err)
	}
	p.loadNft(t, string(conf))
	p.listen(t, webPort)
	// The offline facts know nothing of IPv6 on the host and take it on:
	// the namespace has it on, and the connects agree with the file.
	seen := p.agree(t, fw, webPort)
	if !seen["ipv6/8080"] || seen["ipv4/8080"] {
		t.Errorf("connects %v; want 8080 over IPv6 alone", seen)
	}
}

// Class 6: the host's IPv6 address is on lo alone (an anycast or routed
// service address), and the veth carries no IPv6 address of its own: a
// host outside routes to it all the same, so IPv6 is on and unfiltered.
func TestFamilyIPv6AddressOnLoopbackIsReachable(t *testing.T) {
	p := newPairedNetns(t)
	p.loadNft(t, ipOnlyRuleset)
	ip := testutil.Tool(t, "ip", "iproute2")
	const routed, inMAC, outMAC = "fd31::1", "02:29:00:00:00:02", "02:29:00:00:00:01"
	for _, args := range [][]string{
		{"-n", p.inner, "-6", "addr", "flush", "dev", "vin"},
		{"-n", p.inner, "link", "set", "vin", "address", inMAC},
		{"-n", p.outer, "link", "set", "vout", "address", outMAC},
		{"-n", p.inner, "addr", "add", routed + "/128", "dev", "lo"},
		{"-n", p.inner, "-6", "route", "add", "fd29::1/128", "dev", "vin"},
		{"-n", p.inner, "neigh", "replace", "fd29::1", "lladdr", outMAC, "dev", "vin", "nud", "permanent"},
		{"-n", p.outer, "-6", "route", "add", routed + "/128", "dev", "vout"},
		{"-n", p.outer, "neigh", "replace", routed, "lladdr", inMAC, "dev", "vout", "nud", "permanent"},
	} {
		testutil.Run(t, 10*time.Second, ip, args...)
	}
	sysctl := testutil.Tool(t, "sysctl", "procps")
	// No link-local address comes back on vin: the only IPv6 address the
	// namespace holds outside ::1 is the routed one on lo.
	testutil.Run(t, 10*time.Second, p.in[0], append(slices.Clone(p.in[1:]), sysctl, "-w", "net.ipv6.conf.vin.addr_gen_mode=1")...)
	t.Logf("addresses:\n%s", testutil.Run(t, 10*time.Second, ip, "-n", p.inner, "-6", "addr"))
	listening := []facts.Listener{p.listen(t, webPort)}
	fw, results := p.scan(t, listening)
	if fw.IPv6 == nil || !fw.IPv6.Enabled || !strings.Contains(fw.IPv6.Evidence, "lo holds "+routed) {
		t.Errorf("ipv6 %+v; want on, on the evidence of %s on lo", fw.IPv6, routed)
	}
	ok, err := p.connects(t, "["+routed+"]:"+strconv.Itoa(webPort))
	if !ok {
		t.Fatalf("connect to [%s]:%d from outside: %v; the class needs the routed address reachable", routed, webPort, err)
	}
	r := results["GH-NET-004"]
	if r.Status != "fail" || !strings.Contains(strings.Join(r.Messages, "|"), "reachable over IPv6") {
		t.Errorf("GH-NET-004 %s %q; want port %d reachable over IPv6", r.Status, r.Messages, webPort)
	}
}
