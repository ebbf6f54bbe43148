package network

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestNftFileSetsAndJumps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     string
		policy string
		ports  []int
	}{
		{"named set in a table", "table inet f {\n set ok { type inet_service; flags interval\n  elements = { 22, 6000-6002 }\n }\n chain i { type filter hook input priority 0; policy drop; tcp dport @ok accept }\n}\n", "drop", []int{22, 6000, 6001, 6002}},
		{"set declared after its use", "table inet f {\n chain i { type filter hook input priority 0; policy drop; tcp dport @late accept }\n set late { type inet_service; elements = { 443 } }\n}\n", "drop", []int{443}},
		{"flat set and element", "add table inet f\nadd set inet f s { type inet_service; }\nadd element inet f s { 80, 81 }\nadd chain inet f i { type filter hook input priority 0; policy drop; }\nadd rule inet f i tcp dport @s accept\n", "drop", []int{80, 81}},
		{"define holding a set", "define WEB = { 80, 443 }\ntable inet f { chain i { type filter hook input priority 0; policy drop; tcp dport $WEB accept } }\n", "drop", []int{80, 443}},
		{"jump and return", "table inet f {\n chain svc { tcp dport 25 return; tcp dport 1-30 accept }\n chain i { type filter hook input priority 0; policy drop; jump svc; tcp dport 25 accept }\n}\n", "drop", []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30}},
		{"goto does not come back", "table inet f {\n chain web { tcp dport 80 accept }\n chain i { type filter hook input priority 0; policy drop; meta l4proto tcp goto web; tcp dport 22 accept; udp dport 53 accept }\n}\n", "drop", []int{53, 80}},
		{"drop ahead of an accept", "table inet f { chain i { type filter hook input priority 0; policy drop; tcp dport 23 drop; tcp dport 20-25 accept } }\n", "drop", []int{20, 21, 22, 24, 25}},
		{"negated set", "table inet f {\n set no { type inet_service; elements = { 1-65534 } }\n chain i { type filter hook input priority 0; policy drop; tcp dport != @no accept }\n}\n", "drop", []int{0, 65535}},
		{"unreachable chain opens nothing", "table inet f {\n chain spare { tcp dport 7777 accept }\n chain i { type filter hook input priority 0; policy drop; }\n}\n", "drop", []int{}},
		{"accept policy with a catch-all drop", "table inet f { chain i { type filter hook input priority 0; policy accept; tcp dport 22 accept; drop } }\n", "drop", []int{22}},
		{"ct state vmap for established", "table inet f { chain i { type filter hook input priority 0; policy drop;\n ct state vmap { established : accept, related : accept, invalid : drop }\n tcp dport 22 accept } }\n", "drop", []int{22}},
		{"insert goes first", "table inet f { chain i { type filter hook input priority 0; policy drop; tcp dport 22 accept; } }\ninsert rule inet f i tcp dport 22 drop\n", "drop", []int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := parseNftVerdict([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if v.policy != tc.policy || !equalInts(v.ports, tc.ports) {
				t.Errorf("got %s %v, want %s %v", v.policy, v.ports, tc.policy, tc.ports)
			}
			if len(v.unknown) != 0 {
				t.Errorf("unmodeled %+v", v.unknown)
			}
		})
	}
}

// A rule the model cannot evaluate is listed, and never read as opening
// or closing nothing: its accepts count, its drops do not hide what
// follows, and an accept without a port is flagged as possibly accepting.
func TestNftUnmodeledRules(t *testing.T) {
	v, err := parseNftVerdict([]byte("table inet f { chain i { type filter hook input priority 0; policy drop;\n" +
		"ip saddr 192.0.2.0/24 drop\n" +
		"ip saddr 10.0.0.0/8 tcp dport 5432 accept\n" +
		"ip saddr 10.1.0.0/16 accept\n" +
		"tcp dport 22 accept\n" +
		"ct state vmap { new : accept }\n} }\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !equalInts(v.ports, []int{22, 5432}) {
		t.Errorf("ports %v, want 22 and the source-restricted 5432", v.ports)
	}
	want := map[string]bool{"line 2": false, "line 3": false, "line 4": true, "line 6": true}
	if len(v.unknown) != len(want) {
		t.Fatalf("unmodeled %+v, want %d rules", v.unknown, len(want))
	}
	for _, u := range v.unknown {
		line := strings.SplitN(u.Rule, ":", 2)[0]
		may, ok := want[line]
		if !ok || u.MayAccept != may || !strings.Contains(u.Reason, "ip saddr") && !strings.Contains(u.Reason, "vmap for new") {
			t.Errorf("unmodeled %+v", u)
		}
	}
}

// An unknown condition on a return or goto may send packets back to a
// caller that accepts them; the model must not read it as a no-op.
func TestNftUnknownReturnAndGoto(t *testing.T) {
	for name, in := range map[string]string{
		"return": "table inet f {\n chain svc { ip saddr 10.0.0.0/8 return; tcp dport 22 drop }\n chain i { type filter hook input priority 0; policy drop; jump svc; tcp dport 22 accept }\n}\n",
		"goto":   "table inet f {\n chain web { tcp dport 81 drop }\n chain svc { ip saddr 10.0.0.0/8 goto web; tcp dport 80 drop }\n chain i { type filter hook input priority 0; policy drop; jump svc; tcp dport 80 accept }\n}\n",
	} {
		v, err := parseNftVerdict([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if len(v.ports) != 1 || len(v.unknown) != 1 || v.unknown[0].MayAccept {
			t.Errorf("%s: ports %v unmodeled %+v; want the port the caller accepts, one rule that is followed", name, v.ports, v.unknown)
		}
	}
}

func TestNftEvaluationBounds(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"jump loop":     {"table inet f {\n chain a { jump b }\n chain b { jump a }\n chain i { type filter hook input priority 0; policy drop; jump a }\n}\n", "nested deeper than"},
		"missing chain": {"table inet f { chain i { type filter hook input priority 0; policy drop; jump nowhere } }\n", "does not exist"},
		"too many rules": {"table inet f { chain i { type filter hook input priority 0; policy drop;\n" +
			strings.Repeat("tcp dport 1 accept\n", maxRules+1) + "} }\n", "more than 20000 rules"},
		// Each chain jumps to the next three times: the visits triple
		// with depth while the depth stays within bounds.
		"too many visits": {fanOut(12), "rule visits"},
		"too many set elements": {"table inet f { set s { type inet_service; elements = { " +
			strings.Repeat("1, ", maxSetElements+1) + "2 } } }\n", "set elements"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := parseNftVerdict([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want an error with %q", err, tc.want)
			}
		})
	}
}

func fanOut(depth int) string {
	var b strings.Builder
	b.WriteString("table inet f {\n")
	for i := 0; i < depth; i++ {
		b.WriteString("chain c" + strconv.Itoa(i) + " { jump c" + strconv.Itoa(i+1) + "; jump c" + strconv.Itoa(i+1) + "; jump c" + strconv.Itoa(i+1) + " }\n")
	}
	b.WriteString("chain c" + strconv.Itoa(depth) + " { tcp dport 1 accept }\n")
	b.WriteString("chain i { type filter hook input priority 0; policy drop; jump c0 }\n}\n")
	return b.String()
}

func TestNftAdmitsNameTheRule(t *testing.T) {
	v, err := parseNftVerdict([]byte("table inet f {\n chain svc { tcp dport { 80, 443 } accept }\n chain i { type filter hook input priority 0; policy accept;\n  jump svc\n }\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v.policy != "accept" {
		t.Errorf("policy %q", v.policy)
	}
	if a := admitOf(v.admits, "tcp", 443); a != "line 2: tcp dport { 80, 443 } accept" {
		t.Errorf("443 admitted by %q", a)
	}
	if a := admitOf(v.admits, "udp", 9); a != "policy accept of inet f i" {
		t.Errorf("udp 9 admitted by %q, want the policy", a)
	}
}

func TestNftIntervalPorts(t *testing.T) {
	elem := func(p int, end bool) setBound { return setBound{port: p, end: end} }
	got := intervalPorts([]setBound{elem(91, true), elem(80, false), elem(23, true), elem(22, false), elem(0, true), elem(65000, false)})
	var want portSet
	want.add(22, 22)
	want.add(80, 90)
	want.add(65000, 65535)
	if got != want {
		t.Errorf("interval set %v", got.ranges())
	}
}

// The input path beyond the input hook (issue 48): prerouting filter
// chains before and behind destination NAT, ct state before conntrack,
// dormant tables, and the ports NAT publishes. TestFirewallDifferential
// holds the same semantics to the kernel on generated rulesets; these pin
// one case each.
func TestNftInputPathBeyondTheInputHook(t *testing.T) {
	const input = "chain in { type filter hook input priority filter; policy drop; tcp dport 22 accept; tcp dport 80 accept }\n"
	for _, tc := range []struct {
		name      string
		in        string
		ports     []int  // IPv4's admitted TCP ports
		published string // IPv4's published runs, "from-to>to_address:to_port admitted"
	}{
		{"prerouting drop is final",
			"table inet f {\n" + input + " chain pre { type filter hook prerouting priority raw; policy accept; tcp dport 80 drop }\n}\n",
			[]int{22}, ""},
		{"prerouting policy drop closes all",
			"table ip f {\n" + input + " chain pre { type filter hook prerouting priority -150; policy drop; }\n}\n",
			[]int{}, ""},
		{"ct state invalid before conntrack is every packet",
			"table inet f {\n" + input + " chain raw { type filter hook prerouting priority -300; policy accept; ct state invalid drop }\n}\n",
			[]int{}, ""},
		{"ct state invalid behind conntrack is no new connection",
			"table inet f {\n" + input + " chain mangle { type filter hook prerouting priority mangle; policy accept; ct state invalid drop }\n}\n",
			[]int{22, 80}, ""},
		{"ct state new before conntrack matches nothing",
			"table inet f {\n chain raw { type filter hook prerouting priority raw; policy drop; ct state new accept; tcp dport 22 accept }\n" + input + "}\n",
			[]int{22}, ""},
		{"a dormant table filters nothing",
			"table inet f {\n" + input + "}\ntable ip d {\n flags dormant\n chain in { type filter hook input priority filter; policy drop; }\n}\n",
			[]int{22, 80}, ""},
		{"redirect moves a port onto an admitted one",
			"table inet f {\n" + input + "}\ntable ip nat {\n chain pre { type nat hook prerouting priority dstnat; tcp dport 2222 redirect to :22; tcp dport 80 redirect to :8080 }\n}\n",
			[]int{22}, "2222-2222>:22 true, 80-80>:8080 false"},
		{"a filter chain behind dstnat sees the moved port",
			"table inet f {\n" + input + " chain late { type filter hook prerouting priority filter; policy accept; tcp dport 22 drop }\n}\ntable ip nat {\n chain pre { type nat hook prerouting priority dstnat; tcp dport 2222 redirect to :22 }\n}\n",
			[]int{80}, "2222-2222>:22 false"},
		{"the first nat rule decides",
			"table inet f {\n" + input + "}\ntable inet nat {\n chain pre { type nat hook prerouting priority dstnat; tcp dport 8000-8100 accept; tcp dport 8000-9000 redirect }\n}\n",
			[]int{22, 80}, "8101-9000>:0 false"},
		{"dnat is judged by the forward path",
			"table inet f {\n" + input + " chain fwd { type filter hook forward priority filter; policy drop; ct state established,related accept; tcp dport 80 accept }\n}\n" +
				"table ip nat {\n chain pre { type nat hook prerouting priority dstnat; tcp dport 8080 dnat to 10.30.0.2:80; tcp dport 9000 dnat to 10.30.0.3:9000 }\n}\n",
			[]int{22, 80}, "8080-8080>10.30.0.2:80 true, 9000-9000>10.30.0.3:9000 false"},
		{"a forward path that drops the replies ends the connection",
			"table inet f {\n" + input + " chain fwd { type filter hook forward priority filter; policy drop; tcp dport 80 accept }\n}\n" +
				"table ip nat {\n chain pre { type nat hook prerouting priority dstnat; tcp dport 8080 dnat to 10.30.0.2:80 }\n}\n",
			[]int{22, 80}, "8080-8080>10.30.0.2:80 false"},
		{"replies cross the prerouting chains too",
			"table inet f {\n" + input + " chain raw { type filter hook prerouting priority raw; policy drop; tcp dport 1-9100 accept }\n}\n" +
				"table ip nat {\n chain pre { type nat hook prerouting priority dstnat; tcp dport 8080 dnat to 10.30.0.2:80 }\n}\n",
			[]int{22, 80}, "8080-8080>10.30.0.2:80 false"},
		{"dnat ip6 in inet moves IPv6 alone",
			"table inet f {\n" + input + "}\ntable inet nat {\n chain pre { type nat hook prerouting priority dstnat; tcp dport 8080 dnat ip6 to [fd30::2]:80 }\n}\n",
			[]int{22, 80}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := parseNftVerdict([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			ip := v.families[0]
			var tcp []int
			for _, a := range ip.admits {
				for p := a.From; a.Proto == "tcp" && p <= a.To; p++ {
					tcp = append(tcp, p)
				}
			}
			if !equalInts(tcp, tc.ports) {
				t.Errorf("IPv4 admits TCP %v, want %v (%+v)", tcp, tc.ports, ip.admits)
			}
			var pubs []string
			for _, p := range ip.published {
				if p.Proto == "tcp" {
					pubs = append(pubs, fmt.Sprintf("%d-%d>%s:%d %v", p.From, p.To, p.ToAddress, p.ToPort, p.Admitted))
				}
			}
			if got := strings.Join(pubs, ", "); got != tc.published {
				t.Errorf("IPv4 publishes %q, want %q", got, tc.published)
			}
			if len(v.unknown) != 0 {
				t.Errorf("unmodeled %+v", v.unknown)
			}
		})
	}
}
