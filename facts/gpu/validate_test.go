package gpu_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/facts/gpu"
)

// gpuUUID is the fixed UUID the validation mocks give GPU i, so that
// messages and fixtures name the same GPU on every run.
func gpuUUID(i int) string { return fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", i) }

// hgxH100 is a healthy HGX H100 as a validation sees it: 8 GPUs, each
// registered with the NVSwitch fabric, MIG off.
func hgxH100() *server.Server {
	s := dgxH100()
	for i := range s.Devices {
		d := device(s, i)
		d.UUID = gpuUUID(i)
		d.GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) {
			return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(nvml.SUCCESS)}, nvml.SUCCESS
		}
	}
	return s
}

// node describes the host tree a validation reads.
type node struct {
	module   string   // the loaded module's version in /proc/driver/nvidia/version; "" for none
	switches int      // NVSwitch functions on the PCI bus
	cdi      []string // the device names of /etc/cdi/nvidia.yaml; nil for no spec
	extra    map[string]any
}

// hgxNode is what a healthy HGX H100 host shows: its module, four
// NVSwitches and the toolkit's spec naming every GPU by index and UUID.
func hgxNode() node {
	n := node{module: "550.54.15", switches: 4, cdi: []string{"all"}}
	for i := range 8 {
		n.cdi = append(n.cdi, fmt.Sprint(i), gpuUUID(i))
	}
	return n
}

// tree writes the node's host root.
func (n node) tree(t testing.TB) string {
	t.Helper()
	tree := map[string]any{}
	if n.module != "" {
		tree["proc/driver/nvidia/version"] = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + n.module + "  Fri Feb 16 23:25:20 UTC 2024\n"
	}
	pci := func(addr, class string) {
		tree["sys/bus/pci/devices/"+addr+"/vendor"] = "0x10de\n"
		tree["sys/bus/pci/devices/"+addr+"/device"] = "0x22a3\n"
		tree["sys/bus/pci/devices/"+addr+"/class"] = class + "\n"
	}
	for i := range 8 {
		pci(fmt.Sprintf("0000:%02x:00.0", i), "0x030200")
	}
	for i := range n.switches {
		pci(fmt.Sprintf("0000:%02x:00.0", 0x80+i), "0x068000")
	}
	if n.cdi != nil {
		tree["etc/cdi/nvidia.yaml"] = cdiSpec(n.cdi)
	}
	maps.Copy(tree, n.extra)
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, tree)
	return dir
}

// cdiSpec is a spec as nvidia-ctk cdi generate writes it, cut to the parts
// the validation reads.
func cdiSpec(names []string) string {
	var b strings.Builder
	b.WriteString("cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "- name: %q\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n", n)
	}
	b.WriteString("containerEdits:\n  deviceNodes:\n  - path: /dev/nvidiactl\n")
	return b.String()
}

// validate runs the validation of lib over dir, the fabric manager in
// state fm.
func validate(t testing.TB, lib nvml.Interface, dir, fm string, opts ...gpu.ValidateOption) *facts.GPUValidation {
	t.Helper()
	env := collecttest.NewEnv(t, dir, true)
	env.UnitState = func(_ context.Context, unit string) (string, string) {
		if unit != "nvidia-fabricmanager.service" {
			return "unknown", "not a unit this test knows"
		}
		if fm == "unknown" {
			return "unknown", "systemd is not running (no /run/systemd/system)"
		}
		return fm, ""
	}
	v, err := gpu.NewValidator(lib, opts...).Validate(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func stepOf(t testing.TB, v *facts.GPUValidation, name string) facts.ValidationStep {
	t.Helper()
	for _, s := range v.Steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no step %s in %+v", name, v.Steps)
	return facts.ValidationStep{}
}

// expectStep checks a step's status and that its reason holds each of want.
func expectStep(t testing.TB, v *facts.GPUValidation, name, status string, want ...string) facts.ValidationStep {
	t.Helper()
	s := stepOf(t, v, name)
	if s.Status != status {
		t.Errorf("step %s: %s (%s), want %s", name, s.Status, s.Reason, status)
	}
	for _, w := range want {
		if !strings.Contains(s.Reason, w) {
			t.Errorf("step %s reason %q lacks %q", name, s.Reason, w)
		}
	}
	return s
}

// TestValidateHGXH100 runs every step against a healthy HGX H100: the
// driver, the fabric and the MIG mode pass; the container and CUDA steps
// cannot run on a host with no containerd and no vectorAdd, and say so.
// Left out on request, they no longer keep the node from passing.
func TestValidateHGXH100(t *testing.T) {
	dir := hgxNode().tree(t)
	v := validate(t, hgxH100(), dir, "active", gpu.WithMIG(gpu.MIGDisabled))
	expectStep(t, v, gpu.StepDriver, facts.ValidationPassed, "kernel module 550.54.15 (proprietary) and libnvidia-ml 550.54.15 agree; NVML lists 8 GPUs")
	expectStep(t, v, gpu.StepContainer, facts.ValidationNotRun, "no container runtime: ctr (containerd) is not installed")
	expectStep(t, v, gpu.StepCUDA, facts.ValidationNotRun, "no vectorAdd at /usr/lib/gpuhost/validate/vectorAdd")
	fabric := expectStep(t, v, gpu.StepFabric, facts.ValidationPassed, "fabric registration passed on every GPU (8)")
	expectStep(t, v, gpu.StepMIG, facts.ValidationPassed, "MIG disabled wanted) passed on every GPU (8)")
	if !fabric.Required || len(fabric.GPUs) != 8 || fabric.GPUs[7].UUID != gpuUUID(7) || fabric.GPUs[7].Detail != "fabric registration completed" {
		t.Errorf("fabric step %+v", fabric)
	}
	if len(v.GPUs) != 8 || v.GPUs[3] != (facts.ValidationGPU{Index: 3, UUID: gpuUUID(3), Name: "NVIDIA H100 80GB HBM3"}) {
		t.Errorf("gpus %+v", v.GPUs)
	}
	if got := gpu.Verdict(v); got != gpu.VerdictIncomplete {
		t.Errorf("verdict %s, want incomplete: two required steps did not run", got)
	}

	v = validate(t, hgxH100(), dir, "active", gpu.WithSkip(gpu.StepContainer, gpu.StepCUDA))
	for _, name := range []string{gpu.StepContainer, gpu.StepCUDA} {
		if s := expectStep(t, v, name, facts.ValidationNotRun, "left out on request"); s.Required {
			t.Errorf("skipped step %s is required", name)
		}
	}
	expectStep(t, v, gpu.StepMIG, facts.ValidationPassed, "any MIG mode is accepted")
	if got := gpu.Verdict(v); got != gpu.VerdictPassed {
		t.Errorf("verdict %s, want passed: %+v", got, v.Steps)
	}
}

// TestValidateDriver: a library that is not the loaded module's fails the
// driver step, and every other step, which needs its GPUs, does not run.
func TestValidateDriver(t *testing.T) {
	t.Run("version mismatch", func(t *testing.T) {
		n := hgxNode()
		n.module = "535.161.08"
		v := validate(t, hgxH100(), n.tree(t), "active")
		expectStep(t, v, gpu.StepDriver, facts.ValidationFailed, "libnvidia-ml reports driver 550.54.15, but the loaded kernel module is 535.161.08 (/proc/driver/nvidia/version)")
		for _, name := range []string{gpu.StepContainer, gpu.StepCUDA, gpu.StepFabric, gpu.StepMIG} {
			if s := expectStep(t, v, name, facts.ValidationNotRun, "the driver step"); !s.Required {
				t.Errorf("step %s is not required", name)
			}
		}
		if got := gpu.Verdict(v); got != gpu.VerdictFailed {
			t.Errorf("verdict %s, want failed", got)
		}
	})
	t.Run("NVML refuses to start", func(t *testing.T) {
		s := hgxH100()
		s.InitFunc = func() nvml.Return { return nvml.ERROR_LIB_RM_VERSION_MISMATCH }
		v := validate(t, s, hgxNode().tree(t), "active")
		expectStep(t, v, gpu.StepDriver, facts.ValidationFailed, "libnvidia-ml and the loaded kernel module 550.54.15 differ", "ERROR_LIB_RM_VERSION_MISMATCH")
	})
	t.Run("module not loaded", func(t *testing.T) {
		s := hgxH100()
		s.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }
		n := hgxNode()
		n.module = ""
		v := validate(t, s, n.tree(t), "active")
		expectStep(t, v, gpu.StepDriver, facts.ValidationFailed, "the NVIDIA kernel module is not loaded", "ERROR_DRIVER_NOT_LOADED")
	})
	t.Run("module version from sysfs", func(t *testing.T) {
		n := hgxNode()
		n.module = ""
		n.extra = map[string]any{"sys/module/nvidia/version": "550.54.15\n"}
		v := validate(t, hgxH100(), n.tree(t), "active")
		expectStep(t, v, gpu.StepDriver, facts.ValidationPassed, "kernel module 550.54.15 and libnvidia-ml 550.54.15 agree")
	})
	t.Run("a GPU NVML cannot read", func(t *testing.T) {
		s := hgxH100()
		device(s, 6).GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
		v := validate(t, s, hgxNode().tree(t), "active")
		st := expectStep(t, v, gpu.StepDriver, facts.ValidationFailed, "NVML cannot read 1 of its 8 GPUs")
		if g := st.GPUs[6]; g.Status != facts.ValidationFailed || !strings.Contains(g.Detail, "ERROR_GPU_IS_LOST") {
			t.Errorf("GPU 6: %+v", g)
		}
	})
}

// TestValidateFabric: on an NVSwitch system the fabric manager must run, the
// board's NVSwitches must be on the bus and every GPU's registration must
// have completed; a failure names the GPU.
func TestValidateFabric(t *testing.T) {
	cases := []struct {
		name     string
		fm       string
		switches int
		inject   func(*server.Server)
		status   string
		want     string
	}{
		{"one GPU still registering", "active", 4, func(s *server.Server) {
			device(s, 5).GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) {
				return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_IN_PROGRESS}, nvml.SUCCESS
			}
		}, facts.ValidationFailed, "fabric registration failed on 1 of 8 GPUs: GPU 5 (" + gpuUUID(5) + "): fabric registration is still in progress"},
		{"registration completed with an error", "active", 4, func(s *server.Server) {
			device(s, 2).GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) {
				return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(nvml.ERROR_INSUFFICIENT_RESOURCES)}, nvml.SUCCESS
			}
		}, facts.ValidationFailed, "GPU 2 (" + gpuUUID(2) + "): fabric registration completed with an error: ERROR_INSUFFICIENT_RESOURCES"},
		{"fabric manager stopped", "inactive", 4, nil, facts.ValidationFailed, "nvidia-fabricmanager.service is inactive, not active"},
		{"an NVSwitch missing", "active", 3, nil, facts.ValidationFailed, "the PCI bus shows 3 NVSwitches; an 8-GPU HGX H100 board has 4"},
		{"no service manager to ask", "unknown", 4, nil, facts.ValidationNotRun, "whether nvidia-fabricmanager.service runs is unknown: systemd is not running"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := hgxH100()
			if c.inject != nil {
				c.inject(s)
			}
			n := hgxNode()
			n.switches = c.switches
			v := validate(t, s, n.tree(t), c.fm, gpu.WithSkip(gpu.StepContainer, gpu.StepCUDA))
			expectStep(t, v, gpu.StepFabric, c.status, c.want)
		})
	}
}

// TestValidateFabricHGXA100: A100s report no fabric state; on their board
// the fabric manager and the six NVSwitches are what is judged.
func TestValidateFabricHGXA100(t *testing.T) {
	s := dgxA100()
	for i := range s.Devices {
		device(s, i).UUID = gpuUUID(i)
		device(s, i).GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) { return nvml.GpuFabricInfo{}, nvml.ERROR_NOT_SUPPORTED }
	}
	for switches, status := range map[int]string{6: facts.ValidationPassed, 4: facts.ValidationFailed} {
		n := hgxNode()
		n.switches = switches
		v := validate(t, s, n.tree(t), "active", gpu.WithSkip(gpu.StepContainer, gpu.StepCUDA))
		st := expectStep(t, v, gpu.StepFabric, status)
		if status == facts.ValidationFailed && !strings.Contains(st.Reason, "the PCI bus shows 4 NVSwitches; an 8-GPU HGX A100 board has 6") {
			t.Errorf("4 switches: %s", st.Reason)
		}
		if g := st.GPUs[0]; g.Status != facts.ValidationPassed || !strings.Contains(g.Detail, "before Hopper") {
			t.Errorf("%d switches: GPU 0 %+v", switches, g)
		}
	}
}

// TestValidateFabricNotAnNVSwitchSystem: PCIe cards with no NVSwitch on the
// bus have no fabric to validate; the step says why and is not required.
func TestValidateFabricNotAnNVSwitchSystem(t *testing.T) {
	s := dgxa100.NewWithGPUs(gpus.A100_PCIE_40GB, gpus.A100_PCIE_40GB)
	healthy(s)
	n := hgxNode()
	n.switches = 0
	v := validate(t, s, n.tree(t), "inactive", gpu.WithSkip(gpu.StepContainer, gpu.StepCUDA))
	st := expectStep(t, v, gpu.StepFabric, facts.ValidationNotRun, "not an NVSwitch system: 2 × NVIDIA A100-PCIE-40GB is no 8-GPU HGX board, and the PCI bus shows no NVSwitch")
	if st.Required {
		t.Error("the fabric step is required on a node without NVSwitches")
	}
	if got := gpu.Verdict(v); got != gpu.VerdictPassed {
		t.Errorf("verdict %s, want passed", got)
	}
}

// TestValidateMIG holds every GPU to the MIG mode params want.
func TestValidateMIG(t *testing.T) {
	migOn := func(s *server.Server, i int) {
		device(s, i).GetMigModeFunc = func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS }
	}
	cases := []struct {
		name   string
		want   string
		inject func(*server.Server)
		status string
		reason string
	}{
		{"one GPU in MIG mode, disabled wanted", gpu.MIGDisabled, func(s *server.Server) { migOn(s, 2) }, facts.ValidationFailed,
			"failed on 1 of 8 GPUs: GPU 2 (" + gpuUUID(2) + "): MIG enabled; MIG disabled is wanted"},
		{"enabled wanted, none in MIG mode", gpu.MIGEnabled, nil, facts.ValidationFailed, "failed on 8 of 8 GPUs"},
		{"a change pending a reset", gpu.MIGDisabled, func(s *server.Server) {
			device(s, 4).GetMigModeFunc = func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS }
		}, facts.ValidationFailed, "GPU 4 (" + gpuUUID(4) + "): MIG disabled, enabled pending a GPU reset"},
		{"any mode accepted", gpu.MIGAny, func(s *server.Server) { migOn(s, 2) }, facts.ValidationPassed, "any MIG mode is accepted"},
		{"MIG mode unreadable", gpu.MIGDisabled, func(s *server.Server) {
			device(s, 1).GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_UNKNOWN }
		}, facts.ValidationNotRun, "GPU 1 (" + gpuUUID(1) + "): NVML did not say its MIG mode: ERROR_UNKNOWN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := hgxH100()
			if c.inject != nil {
				c.inject(s)
			}
			v := validate(t, s, hgxNode().tree(t), "active", gpu.WithMIG(c.want), gpu.WithSkip(gpu.StepContainer, gpu.StepCUDA))
			expectStep(t, v, gpu.StepMIG, c.status, c.reason)
		})
	}
}

// TestValidateCDISpec: the toolkit's spec must name every GPU NVML lists,
// and "all"; a spec that does not parse fails the step, naming its file.
// Spec problems are failures even where no container runtime could run.
func TestValidateCDISpec(t *testing.T) {
	missing7 := hgxNode().cdi[:15] // all, then 0..6 by index and UUID
	cases := []struct {
		name  string
		cdi   []string
		extra map[string]any
		want  []string
	}{
		{"malformed spec", hgxNode().cdi, map[string]any{"etc/cdi/broken.yaml": "kind: nvidia.com/gpu\ndevices: [\n"},
			[]string{"a CDI spec cannot be read", "/etc/cdi/broken.yaml"}},
		{"a GPU without a device", missing7, nil,
			[]string{"1 of the 8 GPUs NVML lists have no CDI device"}},
		{"a stale device", append(hgxNode().cdi, "8"), nil,
			[]string{"/etc/cdi/nvidia.yaml declares nvidia.com/gpu=8, a GPU NVML does not list"}},
		{"no all", hgxNode().cdi[1:], nil, []string{`no device "all" (nvidia.com/gpu=all)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := hgxNode()
			n.cdi, n.extra = c.cdi, c.extra
			v := validate(t, hgxH100(), n.tree(t), "active")
			expectStep(t, v, gpu.StepContainer, facts.ValidationFailed, c.want...)
		})
	}
	t.Run("index names alone", func(t *testing.T) {
		n := hgxNode()
		n.cdi = []string{"all", "0", "1", "2", "3", "4", "5", "6", "7"}
		v := validate(t, hgxH100(), n.tree(t), "active")
		expectStep(t, v, gpu.StepContainer, facts.ValidationNotRun, "no container runtime")
	})
}

func TestMIGWant(t *testing.T) {
	for _, c := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"gpu_mig": true}, gpu.MIGEnabled},
		{map[string]any{"gpu_mig": false}, gpu.MIGDisabled},
		{map[string]any{"gpu_mig": nil}, gpu.MIGAny},
		{map[string]any{}, gpu.MIGAny},
	} {
		if got, err := gpu.MIGWant(c.params); err != nil || got != c.want {
			t.Errorf("MIGWant(%v) = %q, %v; want %q", c.params, got, err, c.want)
		}
	}
	if _, err := gpu.MIGWant(map[string]any{"gpu_mig": "yes"}); err == nil {
		t.Error("gpu_mig \"yes\" accepted")
	}
}

func TestParseNvidiaSMIList(t *testing.T) {
	out := "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-6e8a3c56-8c4f-4b05-a9e3-6e1c21b8d2f1)\n" +
		"  MIG 1g.10gb      Device  0: (UUID: MIG-2d8c6a44-5b0a-5e1d-9a0e-9b0a6c3f1e22)\n" +
		"GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1a2b)\r\n" +
		"No devices were found\n"
	got := gpu.ParseNvidiaSMIList([]byte(out))
	if len(got) != 2 || !got["GPU-6e8a3c56-8c4f-4b05-a9e3-6e1c21b8d2f1"] || !got["GPU-1a2b"] {
		t.Errorf("ParseNvidiaSMIList = %v", got)
	}
}

// TestValidateCutShort: a validation whose context ends is an error, not a
// set of steps that proves nothing.
func TestValidateCutShort(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	env := &collect.Env{FS: collecttest.NewEnv(t, hgxNode().tree(t), true).FS, Live: true}
	if _, err := gpu.NewValidator(hgxH100()).Validate(ctx, env); err == nil {
		t.Error("a cancelled validation returned no error")
	}
}
