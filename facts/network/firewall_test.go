package network

import (
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

func TestParseNftables(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       string
		policy   string
		ports    []int
		hasInput bool
	}{
		{"debian default", "#!/usr/sbin/nft -f\nflush ruleset\ntable inet filter {\n\tchain input {\n\t\ttype filter hook input priority filter;\n\t}\n\tchain forward {\n\t\ttype filter hook forward priority filter; policy drop;\n\t}\n}\n", "accept", []int{}, true},
		{"sets, ranges, names", "table ip fw {\n set allowed { type inet_service; elements = { 1, 2 } }\n chain in { type filter hook input priority 0; policy DROP;\n  tcp dport { ssh, https, 8000-8002 } ct state new accept\n  udp dport 53 accept\n  tcp dport 25 drop\n  tcp dport != 23 drop\n  meta l4proto { tcp, udp } th dport 9 accept comment \"x\"\n }\n}\n", "drop", []int{9, 22, 53, 443, 8000, 8001, 8002}, true},
		{"flat syntax", "add table inet f\nadd chain inet f input { type filter hook input priority 0 ; policy reject ; }\nadd rule inet f input tcp dport 22 accept\n", "reject", []int{22}, true},
		{"two tables strictest wins", "table inet a { chain i { type filter hook input priority 0; policy accept; tcp dport 80 accept; } }\ntable ip6 b { chain i { type filter hook input priority 10; policy drop; tcp dport 443 accept } }\n", "accept", []int{80, 443}, true},
		{"netdev ignored", "table netdev n { chain i { type filter hook ingress device eth0 priority 0; policy drop; } }\n", "accept", []int{}, false},
		{"output only", "table inet f { chain o { type filter hook output priority 0; policy drop; } }\n", "accept", []int{}, false},
		{"continuation", "table inet f { chain i { type filter \\\n hook input priority 0; policy drop; } }\n", "drop", []int{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy, ports, has, err := ParseNftables([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if policy != tc.policy || !equalInts(ports, tc.ports) || has != tc.hasInput {
				t.Errorf("got %s %v %v, want %s %v %v", policy, ports, has, tc.policy, tc.ports, tc.hasInput)
			}
		})
	}
	for _, bad := range []string{"table inet f {\n", "}\n", "table inet f { chain i { \"unterminated } }\n", "table \x00\n", strings.Repeat("{", 100) + strings.Repeat("}", 100)} {
		if _, _, _, err := ParseNftables([]byte(bad)); err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("%q: %v, want an error with a line", bad, err)
		}
	}
}

func TestNftablesIncludes(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"etc/nftables.conf": "include \"loop.nft\"\n",
		"etc/loop.nft":      "include \"/etc/loop.nft\"\n",
		"etc/missing.conf":  "",
	})
	err := collectOne(t, collecttest.NewEnv(t, dir, false), newDoc(facts.KindRootfs), "firewall")
	if err == nil || !strings.Contains(err.Error(), "nested deeper") && !strings.Contains(err.Error(), "more than") {
		t.Errorf("include loop: %v", err)
	}
	collecttest.WriteTree(t, dir, map[string]any{"etc/nftables.conf.d/": nil})
	dir2 := t.TempDir()
	collecttest.WriteTree(t, dir2, map[string]any{"etc/nftables.conf": "include \"/etc/nope.nft\"\n"})
	err = collectOne(t, collecttest.NewEnv(t, dir2, false), newDoc(facts.KindRootfs), "firewall")
	if err == nil || !strings.Contains(err.Error(), "/etc/nope.nft") {
		t.Errorf("missing include: %v", err)
	}
}

func TestUfwDisabledFallsBackToNftables(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"etc/ufw/ufw.conf":  "ENABLED=no\n",
		"etc/nftables.conf": "table inet f { chain i { type filter hook input priority 0; policy drop; tcp dport 22 accept; } }\n",
	})
	f := newDoc(facts.KindRootfs)
	if err := collectOne(t, collecttest.NewEnv(t, dir, false), f, "firewall"); err != nil {
		t.Fatal(err)
	}
	fw := f.Network.Firewall
	// nftables.service is not enabled: the rules are there, but not loaded
	// at boot.
	if fw.Backend != "nftables" || fw.Enabled || fw.DefaultInputPolicy != "drop" || !equalInts(fw.AllowedPorts, []int{22}) || fw.Source != "file" || fw.Path != "/etc/nftables.conf" {
		t.Errorf("firewall %+v", fw)
	}
}

func TestParseUfwRules(t *testing.T) {
	var ps portSet
	err := parseUfwRules([]byte("### tuple ### allow tcp 80,443 0.0.0.0/0 any 0.0.0.0/0 Nginx%20Full - in\n### tuple ### route:allow tcp 5000 0.0.0.0/0 any 0.0.0.0/0 in\n### tuple ### allow_log tcp 7000 ::/0 any ::/0 in\n-A ufw-user-input -p udp --dport 60000:60002 -j ACCEPT\n-A ufw-before-input -p tcp --dport 1 -j ACCEPT\n-A\n"), &ps)
	if err != nil {
		t.Fatal(err)
	}
	if got := ps.list(); !equalInts(got, []int{80, 443, 7000, 60000, 60001, 60002}) {
		t.Errorf("ports %v", got)
	}
	if err := parseUfwRules([]byte("ok\n\x00\n"), &ps); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("binary: %v", err)
	}
}

// A ruleset read from files places its input policy (the policy statement,
// or the hook's declaration where it states none) and each admitting rule
// on their lines, in the file that holds them; the joined policy is placed
// where the family that decided it is.
func TestNftFilePlaces(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"etc/nftables.conf": "#!/usr/sbin/nft -f\nflush ruleset\ninclude \"/etc/nftables.d/v6.nft\"\n" +
			"table ip filter {\n  chain input {\n    type filter hook input priority filter\n    policy drop\n    tcp dport 22 accept\n  }\n}\n",
		"etc/nftables.d/v6.nft": "table ip6 filter {\n  chain input {\n    type filter hook input priority filter;\n    tcp dport { 80, 443 } accept\n  }\n}\n",
	})
	f := newDoc(facts.KindRootfs)
	if err := collectOne(t, collecttest.NewEnv(t, dir, false), f, "firewall"); err != nil {
		t.Fatal(err)
	}
	conf := func(line int) collect.FileLine { return collect.FileLine{File: "/etc/nftables.conf", Line: line} }
	v6 := func(line int) collect.FileLine { return collect.FileLine{File: "/etc/nftables.d/v6.nft", Line: line} }
	fw := f.Network.Firewall
	if fw.DefaultInputPolicy != "accept" || fw.PolicyLocation == nil || *fw.PolicyLocation != v6(3) {
		t.Errorf("policy %s at %v, want accept at %v", fw.DefaultInputPolicy, fw.PolicyLocation, v6(3))
	}
	if len(fw.Families) != 2 {
		t.Fatalf("families %+v", fw.Families)
	}
	if at := fw.Families[0].PolicyLocation; at == nil || *at != conf(7) {
		t.Errorf("IPv4 policy at %v, want %v", at, conf(7))
	}
	if at := fw.Families[1].PolicyLocation; at == nil || *at != v6(3) {
		t.Errorf("IPv6 policy at %v, want %v", at, v6(3))
	}
	for _, tc := range []struct {
		port int
		want collect.FileLine
	}{{22, conf(8)}, {443, v6(4)}, {8080, v6(3)}} {
		got := collect.FileLine{}
		for _, a := range fw.Admits {
			if a.Proto == "tcp" && a.From <= tc.port && tc.port <= a.To {
				got = collect.FileLine{File: a.File, Line: a.Line}
				break
			}
		}
		if got != tc.want {
			t.Errorf("tcp %d admitted at %v, want %v", tc.port, got, tc.want)
		}
	}
}
