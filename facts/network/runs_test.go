package network

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/scan"
)

func TestPortRuns(t *testing.T) {
	for _, tc := range []struct {
		ports []int
		want  []facts.PortRange
	}{
		{nil, nil},
		{[]int{22}, []facts.PortRange{{From: 22, To: 22}}},
		{[]int{443, 80, 81, 22, 82, 80}, []facts.PortRange{{From: 22, To: 22}, {From: 80, To: 82}, {From: 443, To: 443}}},
		{[]int{0, 1, 65535}, []facts.PortRange{{From: 0, To: 1}, {From: 65535, To: 65535}}},
	} {
		if got := portRuns(tc.ports); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("portRuns(%v) = %v, want %v", tc.ports, got, tc.want)
		}
	}
}

// acceptAll is a rootfs whose nftables ruleset admits every TCP port.
func acceptAll(t testing.TB) *facts.Facts {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"etc/nftables.conf": "table inet f { chain i { type filter hook input priority 0; policy drop; tcp dport 1-65535 accept; } }\n",
	})
	f := newDoc(facts.KindRootfs)
	gather(t, collecttest.NewEnv(t, dir, false), f, "firewall")
	return f
}

// An accept of every port is one run in the facts, for the joined view and
// for each family, and GH-NET-003 says it as one finding per run outside
// allowed_ports (the default allows 22 alone): its work follows the rule,
// not the 65,535 ports it opens.
func TestAcceptAllIsOneRun(t *testing.T) {
	f := acceptAll(t)
	fw := f.Network.Firewall
	all := []facts.PortRange{{From: 1, To: 65535}}
	if !reflect.DeepEqual(fw.AllowedPortRanges, all) {
		t.Errorf("joined runs %v", fw.AllowedPortRanges)
	}
	for _, fam := range fw.Families {
		if !reflect.DeepEqual(fam.AllowedPortRanges, all) {
			t.Errorf("%s runs %v", fam.Family, fam.AllowedPortRanges)
		}
	}
	if err := facts.Validate(*f); err != nil {
		t.Fatal(err)
	}
	r := evaluatePack(t, f)["GH-NET-003"]
	want := []string{
		"the nftables firewall accepts inbound ports 1-21, none of which is in allowed_ports",
		"the nftables firewall accepts inbound ports 23-65535, none of which is in allowed_ports",
	}
	if r.Status != "fail" || !reflect.DeepEqual(r.Messages, want) {
		t.Errorf("GH-NET-003 %s:\n%s", r.Status, strings.Join(r.Messages, "\n"))
	}
}

// BenchmarkAcceptAllRuleset is the pack's whole evaluation of a document
// whose firewall admits every port, the engine compiled once.
func BenchmarkAcceptAllRuleset(b *testing.B) {
	ctx := context.Background()
	f := acceptAll(b)
	e, err := scan.Pack{}.Engine(ctx)
	if err != nil {
		b.Fatal(err)
	}
	s := scan.New(e)
	for b.Loop() {
		if _, err := s.Facts(ctx, f); err != nil {
			b.Fatal(err)
		}
	}
}
