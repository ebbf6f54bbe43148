package network

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

func FuzzProcNet(f *testing.F) {
	f.Add([]byte(collecttest.ProcTCP))
	f.Add([]byte(collecttest.ProcTCP6))
	f.Add([]byte(collecttest.ProcUDP))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, state := range []string{"0A", "07"} {
			socks, err := parseProcNet(data, "tcp", state)
			if err != nil {
				continue
			}
			for _, s := range socks {
				if !s.Addr.IsValid() {
					t.Errorf("invalid address in %+v", s)
				}
			}
		}
	})
}

func FuzzNftables(f *testing.F) {
	f.Add([]byte("table inet filter { chain input { type filter hook input priority 0; policy drop; tcp dport { 22, 443 } accept } }\n"))
	f.Add([]byte("define P = 22\nadd chain inet f input { type filter hook input priority 0 ; }\nadd rule inet f input tcp dport $P accept\n"))
	f.Add([]byte("include \"x\"\n{{}}\n"))
	f.Add([]byte("table inet f { set s { type inet_service; elements = { 1-3 } }\n chain c { tcp dport @s accept; return }\n chain i { type filter hook input priority 0; policy drop; jump c; goto c } }\n"))
	f.Add([]byte("table ip nat { chain pre { type nat hook prerouting priority dstnat; tcp dport 2222 redirect to :22; tcp dport 80-90 dnat to 10.0.0.2:80; jump c }\n chain c { dnat ip6 to [fd00::2]:8080 } }\n"))
	f.Add([]byte("table inet d { flags dormant\n chain raw { type filter hook prerouting priority raw - 5; policy drop; ct state != new,untracked drop } }\nadd table ip t { flags dormant; }\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := newNftParser(nil)
		if err := p.parse(data, "/etc/nftables.conf", 0); err != nil {
			return
		}
		v, err := p.rs.verdict()
		if err != nil {
			return
		}
		if v.policy == "" {
			t.Error("empty policy")
		}
		checkNftPlaces(t, v, bytes.Count(data, []byte("\n"))+1)
		for i, p := range v.ports {
			if p < 0 || p > 65535 || (i > 0 && v.ports[i-1] >= p) {
				t.Errorf("bad port list %v", v.ports)
				break
			}
		}
		// Every port a rule admits is in the list; the rest of what is
		// admitted must come from an accepting policy.
		for _, a := range v.admits {
			if a.From > a.To || (a.Proto != "tcp" && a.Proto != "udp") {
				t.Fatalf("bad admit %+v", a)
			}
			if strings.HasPrefix(a.Rule, "policy accept") {
				if v.policy != "accept" {
					t.Errorf("admitted by policy %+v under policy %q", a, v.policy)
				}
				continue
			}
			if !slices.Contains(v.ports, a.From) || !slices.Contains(v.ports, a.To) {
				t.Errorf("admit %+v outside ports", a)
			}
		}
		for _, u := range v.unknown {
			if u.Rule == "" || u.Reason == "" {
				t.Errorf("unmodeled rule without a name or reason: %+v", u)
			}
		}
		// Each family holds to the same, alone, and the joined ports are
		// the families' together.
		var joined []int
		for _, f := range v.families {
			if !f.filtered && (f.policy != "accept" || len(f.ports) != 0 || len(f.admits) != 0) {
				t.Errorf("unfiltered %s: %s %v %+v", f.name, f.policy, f.ports, f.admits)
			}
			for _, a := range f.admits {
				if strings.HasPrefix(a.Rule, "policy accept") {
					if f.policy != "accept" {
						t.Errorf("%s admits %+v by policy under policy %q", f.name, a, f.policy)
					}
					continue
				}
				if !slices.Contains(f.ports, a.From) || !slices.Contains(f.ports, a.To) {
					t.Errorf("%s admit %+v outside its ports", f.name, a)
				}
			}
			joined = append(joined, f.ports...)
		}
		slices.Sort(joined)
		if joined = slices.Compact(joined); !slices.Equal(joined, v.ports) && !(len(joined) == 0 && len(v.ports) == 0) {
			t.Errorf("families' ports %v, joined %v", joined, v.ports)
		}
	})
}

func FuzzUfwRules(f *testing.F) {
	f.Add([]byte("### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 in\n-A ufw-user-input -p tcp --dport 22 -j ACCEPT\n"))
	f.Add([]byte("### tuple ### allow udp 1:65535 0.0.0.0/0 any 0.0.0.0/0 in\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ps portSet
		if err := parseUfwRules(data, &ps); err != nil {
			return
		}
		if n := len(ps.list()); n > 65536 {
			t.Errorf("%d ports", n)
		}
	})
}

// checkNftPlaces holds a verdict's places to the one file it was parsed
// from: every admission (a rule's, or an accepting policy's, which every
// input chain of a file has a line for) and every placed policy on one of
// its lines.
func checkNftPlaces(t *testing.T, v fwVerdict, lines int) {
	t.Helper()
	in := func(at collect.FileLine) bool {
		return at.File == "/etc/nftables.conf" && at.Line >= 1 && at.Line <= lines
	}
	for _, a := range v.admits {
		if !in(collect.FileLine{File: a.File, Line: a.Line}) {
			t.Fatalf("admit %+v is not placed in a %d-line file", a, lines)
		}
	}
	for _, f := range v.families {
		if f.policyAt != (collect.FileLine{}) && (!in(f.policyAt) || !f.filtered) {
			t.Fatalf("%s policy %s placed at %+v", f.name, f.policy, f.policyAt)
		}
	}
}
