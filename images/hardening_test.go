package images

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan/waivers"
)

// allowedPorts reads allowed_ports from params-debian-12.yaml.
func allowedPorts(t *testing.T) []int {
	t.Helper()
	data, err := os.ReadFile("params-debian-12.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		AllowedPorts []int `yaml:"allowed_ports"`
	}
	if err := yaml.Unmarshal(data, &p); err != nil {
		t.Fatalf("parsing params-debian-12.yaml: %v", err)
	}
	if len(p.AllowedPorts) == 0 {
		t.Fatal("params-debian-12.yaml sets no allowed_ports")
	}
	return p.AllowedPorts
}

// The waivers must load, cover exactly what Debian 12 cannot provide, and
// apply to the baked image (hostname debian-12-gpu). The encryption waiver
// never covers a live host; what Debian does not package covers the hosts
// booted from the image, and no other.
func TestWaiversDebian12(t *testing.T) {
	list, err := waivers.Load("waivers-debian-12.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, w := range list {
		ids = append(ids, w.ID)
		if len(strings.Fields(w.Justification)) < 20 {
			t.Errorf("%s: justification too short to say why: %q", w.ID, w.Justification)
		}
		image := reports.Target{Kind: "image", Ref: "out/debian-12-gpu/disk.qcow2", Hostname: "debian-12-gpu"}
		if !w.Matches(image) {
			t.Errorf("%s does not cover the baked image %+v", w.ID, image)
		}
		if other := (reports.Target{Kind: "host", Ref: "gpu-node-17", Hostname: "gpu-node-17"}); w.Matches(other) {
			t.Errorf("%s covers a host %+v the image did not boot", w.ID, other)
		}
		booted := reports.Target{Kind: "host", Ref: "debian-12-gpu", Hostname: "debian-12-gpu"}
		if !w.Matches(booted) {
			t.Errorf("%s does not cover the host booted from the image %+v", w.ID, booted)
		}
		other := reports.Target{Kind: "image", Ref: "out/other/disk.qcow2", Hostname: "other"}
		if w.Matches(other) {
			t.Errorf("%s covers another image %+v", w.ID, other)
		}
	}
	slices.Sort(ids)
	// GH-ENC-001 is not among them: the root is LUKS2 (encryption { luks2 = true }).
	if want := []string{"GH-PIN-005", "GH-RT-001", "GH-RT-003"}; !slices.Equal(ids, want) {
		t.Errorf("waived checks %v; want exactly %v (anything else must be fixed in the template)", ids, want)
	}
}

// The QEMU waivers cover the booted test VM, which has no GPU and whose
// agent's certificate comes from the test's own CA, and never the image,
// whose gate must judge the GPU stack as it is, nor another host.
func TestWaiversQEMU(t *testing.T) {
	list, err := waivers.Load("waivers-qemu.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, w := range list {
		ids = append(ids, w.ID)
	}
	if !slices.Equal(ids, []string{"GH-GPU-020", "GH-TLS-008"}) {
		t.Fatalf("waivers-qemu.yaml waives %v; want GH-GPU-020 and GH-TLS-008 alone", ids)
	}
	for _, w := range list {
		if !w.Matches(reports.Target{Kind: "host", Ref: "debian-12-gpu", Hostname: "debian-12-gpu"}) {
			t.Errorf("%s does not cover the booted VM", w.ID)
		}
		for _, other := range []reports.Target{
			{Kind: "image", Ref: "out/debian-12-gpu/disk.qcow2", Hostname: "debian-12-gpu"},
			{Kind: "host", Ref: "gpu-node-17", Hostname: "gpu-node-17"},
		} {
			if w.Matches(other) {
				t.Errorf("%s covers %+v", w.ID, other)
			}
		}
	}
}
