package gpu_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/target"
	"github.com/gpuhost/gpuhost/target/collector"
	"github.com/gpuhost/gpuhost/target/domains"
)

// ibPort writes one RDMA port's attributes as the kernel lays them out
// under /sys/class/infiniband.
func ibPort(t *testing.T, root, dev, port string, attrs map[string]string) {
	t.Helper()
	dir := filepath.Join(root, "sys/class/infiniband", dev, "ports", port)
	must(t, os.MkdirAll(filepath.Join(dir, "counters"), 0o755))
	for name, v := range attrs {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o444))
	}
}

func activePort(rate string) map[string]string {
	return map[string]string{"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": rate, "link_layer": "InfiniBand", "counters/link_downed": "0"}
}

// A GPU node's RDMA ports, read from sysfs trees laid out as the kernel
// does and judged by GH-GPU-027 and 028: a port down fails the one check
// naming it, a port at half rate fails it once params set the rate, and
// without nvidia_peermem loaded the GPUDirect check fails; a host with no
// RDMA devices has nothing for either to judge.
func TestInfiniBandPorts(t *testing.T) {
	s := newScanner(t)
	collect := func(t *testing.T, root string) *facts.Facts {
		t.Helper()
		fsys, closer, err := sysroot.Open(root)
		must(t, err)
		defer closer.Close()
		return target.Collect(context.Background(), &collect.Env{FS: fsys, Live: true}, facts.KindHost, "dgx-01",
			target.Options{Collectors: []collector.Collector{domains.PCI(), domains.InfiniBand()}})
	}
	node := func(t *testing.T, peermem bool) string {
		root := sysfsTree(t, map[string][3]string{"0000:07:00.0": {"0x10de", "0x20b2", "0x030200"}}, nil)
		ibPort(t, root, "mlx5_0", "1", activePort("400 Gb/sec (4X NDR)"))
		if peermem {
			must(t, os.MkdirAll(filepath.Join(root, "sys/module/nvidia_peermem"), 0o755))
		}
		return root
	}

	root := node(t, true)
	f := collect(t, root)
	if err := facts.Validate(*f); err != nil {
		t.Fatal(err)
	}
	ib := f.InfiniBand
	if ib == nil || len(ib.Ports) != 1 || !ib.PeerMem {
		t.Fatalf("%+v (%+v)", ib, f.Collectors["infiniband"])
	}
	if p := ib.Ports[0]; p.Device != "mlx5_0" || p.Port != 1 || p.State != "ACTIVE" || p.PhysState != "LinkUp" || p.RateGbps != 400 || p.LinkLayer != "InfiniBand" || p.LinkDowned == nil || *p.LinkDowned != 0 || p.Error != "" {
		t.Errorf("port %+v", p)
	}
	res := scanFacts(t, s, f)
	for _, id := range []string{"GH-GPU-027", "GH-GPU-028"} {
		if res[id].Status != reports.StatusPass {
			t.Errorf("healthy node: %s %s %q", id, res[id].Status, res[id].Messages)
		}
	}

	ibPort(t, root, "mlx5_1", "1", map[string]string{"state": "1: DOWN", "phys_state": "2: Polling", "rate": "10 Gb/sec (4X SDR)", "link_layer": "InfiniBand"})
	res = scanFacts(t, s, collect(t, root))
	if r := res["GH-GPU-027"]; r.Status != reports.StatusFail || len(r.Messages) != 1 || r.Messages[0] != "InfiniBand port mlx5_1/1 is DOWN (Polling), not ACTIVE (LinkUp)" {
		t.Errorf("a port down: GH-GPU-027 %s %q", r.Status, r.Messages)
	}

	res = scanFacts(t, s, collect(t, node(t, false)))
	if r := res["GH-GPU-028"]; r.Status != reports.StatusFail || len(r.Messages) != 1 || !strings.Contains(r.Messages[0], "neither nvidia_peermem nor nv_peer_mem is loaded") {
		t.Errorf("no peermem: GH-GPU-028 %s %q", r.Status, r.Messages)
	}

	bad := node(t, true)
	must(t, os.WriteFile(filepath.Join(bad, "sys/class/infiniband/mlx5_0/ports/1/state"), []byte("ACTIVE\n"), 0o444))
	res = scanFacts(t, s, collect(t, bad))
	if r := res["GH-GPU-027"]; r.Status != reports.StatusError || !strings.Contains(strings.Join(r.Messages, " "), `not "N: STATE"`) {
		t.Errorf("a state without its number: GH-GPU-027 %s %q", r.Status, r.Messages)
	}

	f = collect(t, sysfsTree(t, map[string][3]string{"0000:07:00.0": {"0x10de", "0x20b2", "0x030200"}}, nil))
	if st := f.Collectors["infiniband"]; st.Status != facts.StatusNotApplicable {
		t.Errorf("no RDMA devices: the collector is %+v", st)
	}
	res = scanFacts(t, s, f)
	for _, id := range []string{"GH-GPU-027", "GH-GPU-028"} {
		if r := res[id]; r.Status != reports.StatusSkip || !r.OutOfScope {
			t.Errorf("no RDMA devices: %s %s %q", id, r.Status, r.Messages)
		}
	}
}
