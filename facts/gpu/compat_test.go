package gpu_test

import (
	"testing"

	"github.com/gpuhost/gpuhost/facts/gpu"
)

func TestMaxCUDA(t *testing.T) {
	for _, tc := range []struct {
		branch int
		want   string
		ok     bool
	}{
		{525, "12.0", true}, {530, "12.1", true}, {535, "12.2", true}, {545, "12.3", true},
		{550, "12.4", true}, {555, "12.5", true}, {560, "12.6", true}, {565, "12.7", true},
		{570, "12.8", true}, {575, "12.9", true}, {580, "13.0", true},
		{470, "11.4", true}, {520, "11.8", true},
		{536, "12.2", true}, // a branch between rows supports what the lower row says
		{440, "", false},    // older than the table
		{590, "", false},    // newer than the table: unknown, not 13.0
	} {
		got, ok := gpu.MaxCUDA(tc.branch)
		if got != tc.want || ok != tc.ok {
			t.Errorf("MaxCUDA(%d) = %q, %v; want %q, %v", tc.branch, got, ok, tc.want, tc.ok)
		}
	}
}

func TestArchOf(t *testing.T) {
	for _, tc := range []struct {
		name, arch string
		min        int
		open, only bool
	}{
		{"NVIDIA A100-SXM4-40GB", "ampere", 450, true, false},
		{"NVIDIA A100 80GB PCIe", "ampere", 450, true, false},
		{"NVIDIA A30", "ampere", 450, true, false},
		{"NVIDIA A10G", "ampere", 450, true, false},
		{"NVIDIA H100 80GB HBM3", "hopper", 525, true, false},
		{"NVIDIA H200", "hopper", 535, true, false},
		{"NVIDIA GH200 480GB", "hopper", 535, true, false},
		{"NVIDIA B200", "blackwell", 570, true, true},
		{"NVIDIA GB200", "blackwell", 570, true, true},
		{"NVIDIA L4", "ada", 525, true, false},
		{"NVIDIA L40S", "ada", 525, true, false},
		{"Tesla V100-SXM2-16GB", "volta", 384, false, false},
		{"Tesla T4", "turing", 410, true, false},
		{"Tesla P100-PCIE-16GB", "pascal", 367, false, false},
	} {
		a, ok := gpu.ArchOf(tc.name)
		if !ok || a.Name != tc.arch || a.MinBranch != tc.min || a.OpenSupported != tc.open || a.OpenRequired != tc.only {
			t.Errorf("ArchOf(%q) = %+v, %v", tc.name, a, ok)
		}
	}
	for _, name := range []string{"", "NVIDIA Graphics Device", "80GB", "A1000000"} {
		if a, ok := gpu.ArchOf(name); ok {
			t.Errorf("ArchOf(%q) = %+v, want unknown", name, a)
		}
	}
	if a, ok := gpu.ArchByName("Hopper"); !ok || a.MinBranch != 525 {
		t.Errorf("ArchByName(Hopper) = %+v, %v", a, ok)
	}
}

func TestBranchAndVersions(t *testing.T) {
	if b, ok := gpu.Branch("535.261.03"); !ok || b != 535 {
		t.Errorf("Branch = %d, %v", b, ok)
	}
	for _, bad := range []string{"", "x.1", "-5.1", "99999.1"} {
		if _, ok := gpu.Branch(bad); ok {
			t.Errorf("Branch(%q) ok", bad)
		}
	}
	for in, want := range map[string]string{
		"1:535.261.03-1": "535.261.03", "535.161.08-0ubuntu2.22.04.1": "535.161.08",
		"11.8.89~11.8.0-5~deb12u1": "11.8.89", "570.86.15": "570.86.15",
	} {
		if got := gpu.UpstreamVersion(in); got != want {
			t.Errorf("UpstreamVersion(%q) = %q, want %q", in, got, want)
		}
	}
	if gpu.CompareVersions("12.10", "12.9") != 1 || gpu.CompareVersions("11.8", "12.0") != -1 || gpu.CompareVersions("12.2", "12.2") != 0 {
		t.Error("CompareVersions orders wrongly")
	}
}

func TestThrottleReasons(t *testing.T) {
	got := gpu.ThrottleReasons(0)
	if len(got) != 0 || got == nil {
		t.Errorf("ThrottleReasons(0) = %#v, want an empty list", got)
	}
}
