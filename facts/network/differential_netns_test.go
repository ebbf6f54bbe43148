package network

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/scan"
)

// The differential test holds the firewall model to the kernel on
// generated rulesets. For each ruleset an inner namespace loads it and
// listens on diffListening, and an outer one connects to every port of
// the pool over IPv4 and IPv6: the connects are the truth. Ours is read
// three ways on the same ruleset: the facts from the kernel's ruleset as
// a live scan reads it, the facts from the ruleset's text as an image's
// /etc/nftables.conf is read, and GH-NET-004's findings on the live facts.
// make test runs a fixed seed's few dozen cases; make differential runs
// thousands, bounded in time.
var (
	diffCases    = flag.Int("differential.cases", 24, "how many generated rulesets TestFirewallDifferential runs")
	diffSeed     = flag.Uint64("differential.seed", 1, "the seed of TestFirewallDifferential's first ruleset")
	diffDuration = flag.Duration("differential.duration", 0, "stop TestFirewallDifferential after this long (0: after -differential.cases)")
)

// diffConnectTimeout bounds one connect over the veth pair; an answer
// there takes microseconds, a dropped SYN the whole timeout.
const diffConnectTimeout = 400 * time.Millisecond

// verdictOf is one reader's answer for a family and port: reachable,
// not, or undecided (a rule it cannot evaluate may admit the port).
type verdictOf int

const (
	closed verdictOf = iota
	open
	undecided
)

func (v verdictOf) String() string { return [...]string{"closed", "open", "undecided"}[v] }

func fromBool(b bool) verdictOf {
	if b {
		return open
	}
	return closed
}

// disagreement is one family and port where a reader differs from the
// connect.
type disagreement struct {
	c      fwCase
	family string
	port   int
	truth  bool
	reader string
	got    verdictOf
}

func (d disagreement) String() string {
	return fmt.Sprintf("seed %d %s port %d: connect %s, %s says %s", d.c.seed, d.family, d.port, fromBool(d.truth), d.reader, d.got)
}

// diffLimit is a documented limit of the model: a disagreement it matches
// is counted and logged, not failed. Each has a test of its own that pins it.
type diffLimit struct {
	name  string
	match func(disagreement) bool
}

// diffLimits are the model's documented limits (docs/limits.md).
var diffLimits = []diffLimit{}

func TestFirewallDifferential(t *testing.T) {
	p := newPairedNetns(t)
	nft := testutil.Tool(t, "nft", "nftables")
	restore := testutil.Tool(t, "iptables-nft-restore", "iptables")
	p.pinNeighbours(t)
	for _, port := range diffListening {
		p.listenHere(t, p.inner, port)
	}
	p.listenHere(t, p.addContainer(t), containerPort)
	ctx := context.Background()
	e, err := scan.Pack{Set: map[string]any{"allowed_ports": []any{1}}, SetBy: "the differential test"}.Engine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var deadline time.Time
	if *diffDuration > 0 {
		deadline = time.Now().Add(*diffDuration)
	}
	perFeature := map[string][2]int{}
	var found []disagreement
	ran, limited, answered := 0, 0, 0
	for i := range *diffCases {
		if !deadline.IsZero() && time.Now().After(deadline) {
			break
		}
		c := genRuleset(*diffSeed + uint64(i))
		if err := p.tryLoadNft(nft, c.text); err != nil {
			t.Errorf("seed %d: nft refused the generated ruleset: %v\n%s", c.seed, err, c.text)
			continue
		}
		if c.iptables != "" {
			if err := p.tryRestore(restore, c.iptables); err != nil {
				t.Errorf("seed %d: iptables-nft-restore refused the generated rules: %v\n%s", c.seed, err, c.iptables)
				continue
			}
		}
		ran++
		ds, moved := p.differ(t, e, c)
		answered += moved
		for _, f := range append([]string{"all"}, c.features...) {
			n := perFeature[f]
			n[0]++
			if len(ds) > 0 {
				n[1]++
			}
			perFeature[f] = n
		}
		for _, d := range ds {
			if slices.ContainsFunc(diffLimits, func(l diffLimit) bool { return l.match(d) }) {
				limited++
				t.Logf("documented limit: %s", d)
				continue
			}
			found = append(found, d)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(perFeature)) {
		n := perFeature[f]
		t.Logf("%-10s %5d cases, %4d with a disagreement", f, n[0], n[1])
	}
	t.Logf("%d rulesets from seed %d, %d disagreements, %d of them documented limits; %d connects answered through NAT", ran, *diffSeed, len(found)+limited, limited, answered)
	shown := map[uint64]bool{}
	for _, d := range found {
		t.Errorf("%s", d)
		if !shown[d.c.seed] {
			shown[d.c.seed] = true
			t.Logf("ruleset of seed %d (features %v):\n%s", d.c.seed, d.c.features, d.c.text)
			if d.c.iptables != "" {
				t.Logf("and iptables-nft-restore --noflush:\n%s", d.c.iptables)
			}
		}
	}
}

// differ loads nothing: it compares the connects with the three readers
// on the ruleset the inner namespace holds now. moved counts the connects
// that answered on a port the kernel's facts say NAT moves, so that the
// log shows the nat cases reached something.
func (p pairedNetns) differ(t *testing.T, e *engine.Engine, c fwCase) (ds []disagreement, moved int) {
	t.Helper()
	truth := p.connectAll(t, diffPorts())
	kernel, pack := p.liveFacts(t, e)
	file := fileFacts(t, c.text)
	listening := map[int]bool{}
	for _, port := range diffListening {
		listening[port] = true
	}
	var out []disagreement
	for _, family := range []string{"ipv4", "ipv6"} {
		for _, port := range diffPorts() {
			want := truth[family+"/"+strconv.Itoa(port)]
			if want && publishedOver(kernel, family, port) {
				moved++
			}
			for reader, got := range map[string]verdictOf{
				"kernel facts": factsReach(kernel, family, port, listening),
				"file facts":   fileReach(c, file, family, port, listening),
				"GH-NET-004":   pack[family+"/"+strconv.Itoa(port)],
			} {
				if got != undecided && got != fromBool(want) {
					out = append(out, disagreement{c: c, family: family, port: port, truth: want, reader: reader, got: got})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b disagreement) int { return strings.Compare(a.String(), b.String()) })
	return out, moved
}

// fileReach is the file reader's answer, undecided where the case also
// loads iptables rules, which an image keeps elsewhere than
// /etc/nftables.conf.
func fileReach(c fwCase, fw *facts.Firewall, family string, port int, listening map[int]bool) verdictOf {
	if c.iptables != "" {
		return undecided
	}
	return factsReach(fw, family, port, listening)
}

// publishedOver says the facts have NAT moving TCP port over family.
func publishedOver(fw *facts.Firewall, family string, port int) bool {
	for _, f := range fw.Families {
		if f.Family == family && slices.ContainsFunc(f.Published, func(p facts.FirewallPublished) bool {
			return p.Proto == "tcp" && p.From <= port && port <= p.To
		}) {
			return true
		}
	}
	return false
}

// pinNeighbours makes the veth pair's neighbours permanent on both sides,
// so that a ruleset dropping ICMPv6 closes ports by its port rules, as it
// would for a host whose router already knows it, and not by starving
// neighbour discovery.
func (p pairedNetns) pinNeighbours(t *testing.T) {
	t.Helper()
	ip := testutil.Tool(t, "ip", "iproute2")
	const inMAC, outMAC = "02:29:00:00:00:02", "02:29:00:00:00:01"
	for _, args := range [][]string{
		{"-n", p.inner, "link", "set", "vin", "address", inMAC},
		{"-n", p.outer, "link", "set", "vout", "address", outMAC},
		{"-n", p.outer, "neigh", "replace", innerIPv4, "lladdr", inMAC, "dev", "vout", "nud", "permanent"},
		{"-n", p.outer, "neigh", "replace", innerIPv6, "lladdr", inMAC, "dev", "vout", "nud", "permanent"},
		{"-n", p.inner, "neigh", "replace", "10.29.0.1", "lladdr", outMAC, "dev", "vin", "nud", "permanent"},
		{"-n", p.inner, "neigh", "replace", "fd29::1", "lladdr", outMAC, "dev", "vin", "nud", "permanent"},
	} {
		testutil.Run(t, 10*time.Second, ip, args...)
	}
}

// addContainer makes the container's namespace behind the inner one: a
// veth pair, its addresses, its routes back through the inner namespace,
// and forwarding on in the inner namespace, as a container host has it.
func (p pairedNetns) addContainer(t *testing.T) string {
	t.Helper()
	in := testutil.Netns(t)
	ctr := in[len(in)-1]
	ip := testutil.Tool(t, "ip", "iproute2")
	sysctl := testutil.Tool(t, "sysctl", "procps")
	const hostMAC, ctrMAC = "02:30:00:00:00:01", "02:30:00:00:00:02"
	for _, args := range [][]string{
		{"-n", p.inner, "link", "add", "cin", "address", hostMAC, "type", "veth", "peer", "name", "cout", "address", ctrMAC, "netns", ctr},
		{"-n", p.inner, "addr", "add", "10.30.0.1/24", "dev", "cin"},
		{"-n", p.inner, "addr", "add", "fd30::1/64", "dev", "cin", "nodad"},
		{"-n", p.inner, "link", "set", "cin", "up"},
		{"-n", ctr, "addr", "add", containerIPv4 + "/24", "dev", "cout"},
		{"-n", ctr, "addr", "add", containerIPv6 + "/64", "dev", "cout", "nodad"},
		{"-n", ctr, "link", "set", "cout", "up"},
		{"-n", ctr, "route", "add", "default", "via", "10.30.0.1"},
		{"-n", ctr, "-6", "route", "add", "default", "via", "fd30::1"},
		{"-n", p.inner, "neigh", "replace", containerIPv4, "lladdr", ctrMAC, "dev", "cin", "nud", "permanent"},
		{"-n", p.inner, "neigh", "replace", containerIPv6, "lladdr", ctrMAC, "dev", "cin", "nud", "permanent"},
		{"-n", ctr, "neigh", "replace", "10.30.0.1", "lladdr", hostMAC, "dev", "cout", "nud", "permanent"},
		{"-n", ctr, "neigh", "replace", "fd30::1", "lladdr", hostMAC, "dev", "cout", "nud", "permanent"},
	} {
		testutil.Run(t, 10*time.Second, ip, args...)
	}
	testutil.Run(t, 10*time.Second, p.in[0], append(slices.Clone(p.in[1:]), sysctl, "-w", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1")...)
	return ctr
}

// listenHere listens on [::]:port in the namespace netns from this
// process (both families: Go clears IPV6_V6ONLY) and accepts until the
// test ends.
func (p pairedNetns) listenHere(t *testing.T, netns string, port int) {
	t.Helper()
	l, err := testutil.ListenNetns(netns, "tcp", "[::]:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	})
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
}

// tryLoadNft loads a ruleset in the inner namespace, returning nft's
// complaint instead of failing the test.
func (p pairedNetns) tryLoadNft(nft, text string) error {
	dir, err := os.MkdirTemp("", "gpuhost-differential-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "ruleset.nft")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.in[0], append(slices.Clone(p.in[1:]), nft, "-f", file)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// tryRestore loads iptables rules in the inner namespace with
// iptables-nft-restore, which keeps what the namespace's nftables hold.
func (p pairedNetns) tryRestore(restore, rules string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.in[0], append(slices.Clone(p.in[1:]), restore, "--noflush")...)
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}

// connectAll connects to every port over both families at once and
// returns "family/port" → reached.
func (p pairedNetns) connectAll(t *testing.T, ports []int) map[string]bool {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	seen := map[string]bool{}
	var nsErr error
	for _, port := range ports {
		for family, host := range map[string]string{"ipv4": innerIPv4, "ipv6": "[" + innerIPv6 + "]"} {
			wg.Go(func() {
				ok, err := p.reaches(net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(port)), diffConnectTimeout)
				mu.Lock()
				defer mu.Unlock()
				if errors.Is(err, testutil.ErrNetns) {
					nsErr = err
				}
				seen[family+"/"+strconv.Itoa(port)] = ok
			})
		}
	}
	wg.Wait()
	if nsErr != nil {
		t.Fatal(nsErr)
	}
	return seen
}

// liveFacts collects the inner namespace's firewall as a live scan does,
// with diffListening as its listeners, and returns the firewall facts and
// GH-NET-004's answer per "family/port".
func (p pairedNetns) liveFacts(t *testing.T, e *engine.Engine) (*facts.Firewall, map[string]verdictOf) {
	t.Helper()
	var listening []facts.Listener
	for _, port := range diffListening {
		listening = append(listening, facts.Listener{Proto: "tcp6", Address: "::", Port: port, Process: "differential"})
	}
	live := p.liveDoc(t, listening)
	rep, err := scan.New(e).Facts(context.Background(), live)
	if err != nil {
		t.Fatal(err)
	}
	pack := map[string]verdictOf{}
	for _, r := range rep.Results {
		if r.ID != "GH-NET-004" {
			continue
		}
		for _, m := range r.Messages {
			family, port, v, ok := reachMessage(m)
			if !ok {
				t.Fatalf("GH-NET-004 says %q, which names no port and family", m)
			}
			if pack[family+"/"+strconv.Itoa(port)] != open {
				pack[family+"/"+strconv.Itoa(port)] = v
			}
		}
	}
	return live.Network.Firewall, pack
}

var (
	reachPort   = regexp.MustCompile(`\bport (\d+)\b`)
	reachFamily = regexp.MustCompile(`(may be )?reachable over (IPv4|IPv6)`)
)

// reachMessage reads the external port and the family a GH-NET-004
// finding names, and whether it says reachable or may be.
func reachMessage(m string) (family string, port int, v verdictOf, ok bool) {
	pm, fm := reachPort.FindStringSubmatch(m), reachFamily.FindStringSubmatch(m)
	if pm == nil || fm == nil {
		return "", 0, 0, false
	}
	port, _ = strconv.Atoi(pm[1])
	v = open
	if fm[1] != "" {
		v = undecided
	}
	return strings.ToLower(fm[2]), port, v, true
}

// fileFacts reads the ruleset's text as the file reader reads an image's
// /etc/nftables.conf.
func fileFacts(t *testing.T, text string) *facts.Firewall {
	t.Helper()
	v, err := parseNftVerdict([]byte(text))
	if err != nil {
		t.Fatalf("the file reader refused what nft loaded: %v\n%s", err, text)
	}
	fw := v.firewall("nftables", "file")
	joinFamilies(fw)
	return fw
}

// factsReach is the facts' answer to "does a new TCP connection from
// outside to port reach a listener over family": a family nothing filters
// takes every port, else the family's admissions decide; a rule the model
// cannot evaluate that may accept leaves it undecided.
func factsReach(fw *facts.Firewall, family string, port int, listening map[int]bool) verdictOf {
	var fam *facts.FirewallFamily
	for i := range fw.Families {
		if fw.Families[i].Family == family {
			fam = &fw.Families[i]
		}
	}
	if fam == nil {
		return undecided
	}
	for _, pub := range fam.Published {
		if pub.Proto != "tcp" || port < pub.From || pub.To < port {
			continue
		}
		to := port
		if pub.ToPort != 0 {
			to = pub.ToPort
		}
		switch {
		case pub.ToAddress != "" && pub.Admitted:
			// The generator sends dnat to the container's listener alone.
			return fromBool(to == containerPort)
		case pub.Admitted && pub.ToAddress == "" && listening[to]:
			return open
		case !pub.Partial:
			return closed
		}
	}
	if !fam.Filtered {
		return fromBool(listening[port])
	}
	for _, a := range fam.Admits {
		if a.Proto == "tcp" && a.From <= port && port <= a.To {
			return fromBool(listening[port])
		}
	}
	if slices.ContainsFunc(fw.Unmodeled, func(r facts.FirewallRule) bool { return r.MayAccept }) {
		return undecided
	}
	return closed
}
