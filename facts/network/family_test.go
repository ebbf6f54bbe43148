package network

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

// famWant is what one address family's input path should come to.
type famWant struct {
	filtered bool
	policy   string
	ports    []int
}

func TestNftFamiliesJudgedApart(t *testing.T) {
	const inetDrop = "table inet f { chain i { type filter hook input priority 0; policy drop; tcp dport 22 accept } }\n"
	for _, tc := range []struct {
		name       string
		in         string
		ipv4, ipv6 famWant
		joined     string
	}{
		{"inet counts for both", inetDrop,
			famWant{true, "drop", []int{22}}, famWant{true, "drop", []int{22}}, "drop"},
		{"ip table leaves IPv6 unfiltered", "table ip f { chain i { type filter hook input priority 0; policy drop; tcp dport 22 accept } }\n",
			famWant{true, "drop", []int{22}}, famWant{false, "accept", []int{}}, "drop"},
		{"ip6 table leaves IPv4 unfiltered", "table ip6 f { chain i { type filter hook input priority 0; policy drop; tcp dport 443 accept } }\n",
			famWant{false, "accept", []int{}}, famWant{true, "drop", []int{443}}, "drop"},
		{"iptables-nft and an accepting ip6tables-nft", "table ip filter { chain INPUT { type filter hook input priority filter; policy drop; tcp dport 22 accept } }\n" +
			"table ip6 filter { chain INPUT { type filter hook input priority filter; policy accept; } }\n",
			famWant{true, "drop", []int{22}}, famWant{true, "accept", []int{}}, "accept"},
		{"nfproto splits an inet chain", "table inet f { chain i { type filter hook input priority 0; policy drop;\n meta nfproto ipv4 tcp dport 80 accept\n meta nfproto ipv6 tcp dport 8080 accept\n tcp dport 22 accept } }\n",
			famWant{true, "drop", []int{22, 80}}, famWant{true, "drop", []int{22, 8080}}, "drop"},
		{"an ip table adds to inet for IPv4 alone", inetDrop + "table ip g { chain i { type filter hook input priority 10; policy drop; tcp dport 23 accept } }\n",
			famWant{true, "drop", []int{}}, famWant{true, "drop", []int{22}}, "drop"},
		{"no input hook at all", "table inet f { chain o { type filter hook output priority 0; policy drop; } }\n",
			famWant{false, "accept", []int{}}, famWant{false, "accept", []int{}}, "accept"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := parseNftVerdict([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range []famWant{tc.ipv4, tc.ipv6} {
				got := v.families[i]
				if got.filtered != want.filtered || got.policy != want.policy || !equalInts(got.ports, want.ports) {
					t.Errorf("%s: filtered %v policy %s ports %v, want %+v", got.name, got.filtered, got.policy, got.ports, want)
				}
			}
			if v.policy != tc.joined {
				t.Errorf("joined policy %s, want %s", v.policy, tc.joined)
			}
		})
	}
}

func TestNftFamilyAdmitsAndChains(t *testing.T) {
	v, err := parseNftVerdict([]byte("table inet f {\n chain i { type filter hook input priority 0; policy accept;\n  meta nfproto ipv4 tcp dport 1-65535 drop\n  tcp dport 22 accept\n }\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ip, ip6 := v.families[0], v.families[1]
	if !slices.Equal(ip.chains, []string{"inet f i"}) || !slices.Equal(ip6.chains, []string{"inet f i"}) {
		t.Errorf("chains %v %v", ip.chains, ip6.chains)
	}
	// IPv4 drops every TCP port but none of UDP; IPv6 drops nothing: the
	// policy admits both, and the family says so, not the joined view.
	if a := admitOf(ip.admits, "tcp", 22); a != "" {
		t.Errorf("IPv4 tcp/22 admitted by %q, want nothing", a)
	}
	if a := admitOf(ip6.admits, "tcp", 22); a != "line 4: tcp dport 22 accept" {
		t.Errorf("IPv6 tcp/22 admitted by %q", a)
	}
	if a := admitOf(ip6.admits, "tcp", 8080); a != "policy accept of inet f i" {
		t.Errorf("IPv6 tcp/8080 admitted by %q, want the policy", a)
	}
	if ip.policy != "accept" || ip6.policy != "accept" {
		t.Errorf("policies %s %s", ip.policy, ip6.policy)
	}
}

// fakeProc writes the /proc files the IPv6 state is read from: if_inet6
// (nil: absent) and disable_ipv6 of each conf entry.
func fakeProc(ifInet6 *string, disabled map[string]string) map[string]any {
	tree := map[string]any{"proc/sys/net/": nil}
	if ifInet6 != nil {
		tree["proc/net/if_inet6"] = *ifInet6
	}
	for name, v := range disabled {
		tree["proc/sys/net/ipv6/conf/"+name+"/disable_ipv6"] = v + "\n"
	}
	return tree
}

func TestIPv6StateFromProc(t *testing.T) {
	lo := "00000000000000000000000000000001 01 80 10 80       lo\n"
	eth := lo + "fe8000000000000000fc00fffe000001 02 40 20 80     eth0\nfd000000000000000000000000000002 02 40 00 80     eth0\n"
	empty := ""
	loRouted := lo + "fd310000000000000000000000000001 01 80 00 80       lo\n"
	on := map[string]string{"all": "0", "default": "0", "lo": "0", "eth0": "0"}
	for _, tc := range []struct {
		name     string
		tree     map[string]any
		enabled  bool
		evidence string
	}{
		{"kernel without IPv6", fakeProc(nil, nil), false, "/proc/net/if_inet6 does not exist"},
		{"disabled everywhere", fakeProc(&empty, map[string]string{"all": "1", "default": "1", "lo": "1", "eth0": "1"}), false,
			"disable_ipv6 is 1 in every entry of /proc/sys/net/ipv6/conf (all, default, eth0, lo)"},
		{"loopback alone", fakeProc(&lo, on), false, "no interface but lo has an IPv6 address"},
		{"no address at all", fakeProc(&empty, on), false, "no interface but lo has an IPv6 address"},
		{"on", fakeProc(&eth, on), true, "IPv6 addresses on eth0 (/proc/net/if_inet6)"},
		// An address of the host's own on lo is routed to from outside.
		{"a routed address on lo", fakeProc(&loRouted, on), true, "lo holds fd31::1, which other hosts can route to"},
		// One interface left on is enough to reach the host.
		{"one interface on", fakeProc(&eth, map[string]string{"all": "1", "default": "1", "lo": "1", "eth0": "0"}), true, "IPv6 addresses on eth0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			collecttest.WriteTree(t, dir, tc.tree)
			env := collecttest.NewEnv(t, dir, true)
			env.NetNS = ""
			st := liveIPv6(env)
			if st.Enabled != tc.enabled || !strings.Contains(st.Evidence, tc.evidence) {
				t.Errorf("%+v, want enabled %v with %q", st, tc.enabled, tc.evidence)
			}
		})
	}
	// A namespace that cannot be entered is not evidence of anything.
	if st := ipv6StateIn(collecttest.NoNetNS); !st.Enabled || !strings.Contains(st.Evidence, "taken to be on") {
		t.Errorf("unreadable namespace: %+v", st)
	}
}

func TestJoinFamilies(t *testing.T) {
	fam := func(name string, filtered bool, policy string) facts.FirewallFamily {
		return facts.FirewallFamily{Family: name, Filtered: filtered, DefaultInputPolicy: policy, AllowedPorts: []int{}}
	}
	ipOnly := []facts.FirewallFamily{fam("ipv4", true, "drop"), fam("ipv6", false, "accept")}
	for _, tc := range []struct {
		name     string
		families []facts.FirewallFamily
		ipv6     *facts.IPv6State
		want     string
	}{
		{"IPv6 unfiltered and on", ipOnly, &facts.IPv6State{Enabled: true}, "accept"},
		{"IPv6 unfiltered, not known to be off", ipOnly, nil, "accept"},
		{"IPv6 unfiltered and off", ipOnly, &facts.IPv6State{Enabled: false}, "drop"},
		{"strictest of both", []facts.FirewallFamily{fam("ipv4", true, "reject"), fam("ipv6", true, "drop")}, nil, "drop"},
	} {
		fw := &facts.Firewall{DefaultInputPolicy: "drop", Families: tc.families, IPv6: tc.ipv6}
		joinFamilies(fw)
		if fw.DefaultInputPolicy != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, fw.DefaultInputPolicy, tc.want)
		}
	}
	// The joined policy is placed where the family that decided it sets it:
	// IPv6's drop, not IPv4's reject.
	v4, v6 := fam("ipv4", true, "reject"), fam("ipv6", true, "drop")
	v4.PolicyLocation = &collect.FileLine{File: "/etc/nftables.conf", Line: 5}
	v6.PolicyLocation = &collect.FileLine{File: "/etc/nftables.conf", Line: 12}
	fw := &facts.Firewall{Families: []facts.FirewallFamily{v4, v6}}
	joinFamilies(fw)
	if fw.DefaultInputPolicy != "drop" || fw.PolicyLocation != v6.PolicyLocation {
		t.Errorf("joined %s at %v, want drop at %v", fw.DefaultInputPolicy, fw.PolicyLocation, v6.PolicyLocation)
	}
}

func TestUfwFamilies(t *testing.T) {
	for _, tc := range []struct {
		ipv6         string
		ip6Policy    string
		ip6Ports     []int
		joinedPolicy string
	}{
		{"yes", "drop", []int{443}, "drop"},
		// ufw loads no IPv6 rules then and takes IPv6 on the loopback alone.
		{"no", "drop", []int{}, "drop"},
	} {
		dir := t.TempDir()
		collecttest.WriteTree(t, dir, map[string]any{
			"etc/ufw/ufw.conf":    "ENABLED=yes\n",
			"etc/default/ufw":     "IPV6=" + tc.ipv6 + "\nDEFAULT_INPUT_POLICY=\"DROP\"\n",
			"etc/ufw/user.rules":  "-A ufw-user-input -p tcp --dport 22 -j ACCEPT\n",
			"etc/ufw/user6.rules": "-A ufw6-user-input -p tcp --dport 443 -j ACCEPT\n",
		})
		f := newDoc(facts.KindRootfs)
		if err := collectOne(t, collecttest.NewEnv(t, dir, false), f, "firewall"); err != nil {
			t.Fatal(err)
		}
		fw := f.Network.Firewall
		if len(fw.Families) != 2 {
			t.Fatalf("IPV6=%s: families %+v", tc.ipv6, fw.Families)
		}
		ip, ip6 := fw.Families[0], fw.Families[1]
		if !ip.Filtered || ip.DefaultInputPolicy != "drop" || !equalInts(ip.AllowedPorts, []int{22}) {
			t.Errorf("IPV6=%s: IPv4 %+v", tc.ipv6, ip)
		}
		if !ip6.Filtered || ip6.DefaultInputPolicy != tc.ip6Policy || !equalInts(ip6.AllowedPorts, tc.ip6Ports) {
			t.Errorf("IPV6=%s: IPv6 %+v", tc.ipv6, ip6)
		}
		if fw.DefaultInputPolicy != tc.joinedPolicy || !equalInts(fw.AllowedPorts, []int{22, 443}) {
			t.Errorf("IPV6=%s: joined %s %v", tc.ipv6, fw.DefaultInputPolicy, fw.AllowedPorts)
		}
		if err := facts.Validate(*f); err != nil {
			t.Errorf("IPV6=%s: %v", tc.ipv6, err)
		}
	}
}
