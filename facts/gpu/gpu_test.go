package gpu_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/gpu"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/target/domains"
)

const kernLog = `Mar  8 09:00:01 dgx-01 kernel: [  12.5] nvidia-nvlink: Nvlink Core is being initialized
Mar  8 10:11:12 dgx-01 kernel: [ 1234.5] NVRM: Xid (PCI:0000:03:00): 79, pid=1234, name=python, GPU has fallen off the bus.
Feb 20 10:11:12 dgx-01 kernel: [ 1234.5] NVRM: Xid (PCI:0000:03:00): 48, pid=1, name=old, too old to keep.
Mar  8 10:12:00 dgx-01 kernel: [ 1300.0] NVRM: Xid (PCI:0000:04:00): 13, pid=99, name=app, Graphics Exception
`

func TestHealthyDGXA100(t *testing.T) {
	f := collectHost(t, dgxA100(), hostTree(t, "550.54.15", kernLog))
	if st := f.Collectors["gpu"]; st.Status != facts.StatusOK {
		t.Fatalf("collector status %+v", st)
	}
	g := f.GPU
	if !g.Available || g.Reason != "" {
		t.Fatalf("available=%v reason=%q", g.Available, g.Reason)
	}
	if g.DriverVersion != "550.54.15" || g.DriverBranch != 550 || g.CUDADriverVersion != "12.4" || g.NVMLVersion != "12.550.54.15" {
		t.Errorf("versions: %+v", g)
	}
	if g.KernelModuleVersion != "550.54.15" || g.KernelModuleType != "proprietary" {
		t.Errorf("kernel module %q %q", g.KernelModuleVersion, g.KernelModuleType)
	}
	if g.ConfCompute == nil || *g.ConfCompute != (facts.ConfCompute{Feature: "off", DevtoolsMode: "off", Environment: "unavailable"}) {
		t.Errorf("conf compute %+v", g.ConfCompute)
	}
	if len(g.Devices) != 8 {
		t.Fatalf("%d devices, want 8", len(g.Devices))
	}
	d := g.Devices[3]
	if d.Index != 3 || !strings.HasPrefix(d.UUID, "GPU-") || d.Name != "Mock NVIDIA A100-SXM4-40GB" || d.PCIBusID != "0000:03:00.0" {
		t.Errorf("identity: %d %q %q %q", d.Index, d.UUID, d.Name, d.PCIBusID)
	}
	if len(d.Errors) > 0 {
		t.Errorf("errors on a healthy GPU: %q", d.Errors)
	}
	if !slices.Equal(d.Unsupported, []string{"retired_pages"}) {
		t.Errorf("unsupported %q, want [retired_pages]", d.Unsupported)
	}
	if d.ECC == nil || !d.ECC.Current || !d.ECC.Pending || d.RetiredPages != nil || d.RemappedRows == nil {
		t.Errorf("memory health: ecc %+v retired %+v remapped %+v", d.ECC, d.RetiredPages, d.RemappedRows)
	}
	if d.PersistenceMode == nil || !*d.PersistenceMode || d.MIG == nil || d.MIG.Current {
		t.Errorf("persistence %v mig %+v", d.PersistenceMode, d.MIG)
	}
	if *d.TemperatureC != 41 || *d.TemperatureSlowdownC != 90 || *d.PowerW != 61.5 || *d.PowerLimitW != 400 {
		t.Errorf("temperature %d/%d power %v/%v", *d.TemperatureC, *d.TemperatureSlowdownC, *d.PowerW, *d.PowerLimitW)
	}
	if *d.PCIe != (facts.PCIe{GenCurrent: 4, GenMax: 4, WidthCurrent: 16, WidthMax: 16}) || len(d.NVLink) != 12 || !d.NVLink[11].Active {
		t.Errorf("pcie %+v nvlink %+v", d.PCIe, d.NVLink)
	}
	if !slices.Equal(d.ThrottleReasons, []string{"gpu_idle"}) {
		t.Errorf("throttle %q", d.ThrottleReasons)
	}
	if d.Architecture != "ampere" || d.MinDriverBranch != 450 || d.OpenModuleSupported == nil || !*d.OpenModuleSupported {
		t.Errorf("matrix: %q %d %v", d.Architecture, d.MinDriverBranch, d.OpenModuleSupported)
	}
	// The XID from Feb 20 is outside the 7-day window. Each event names the
	// GPU NVML lists at its PCI address.
	want := []facts.XIDEvent{
		{Code: 79, PCIBusID: "0000:03:00", Time: "Mar  8 10:11:12", Message: "pid=1234, name=python, GPU has fallen off the bus.", Source: "/var/log/kern.log",
			GPUs: []facts.XIDGPU{{Index: 3, UUID: g.Devices[3].UUID}}},
		{Code: 13, PCIBusID: "0000:04:00", Time: "Mar  8 10:12:00", Message: "pid=99, name=app, Graphics Exception", Source: "/var/log/kern.log",
			GPUs: []facts.XIDGPU{{Index: 4, UUID: g.Devices[4].UUID}}},
	}
	if !reflect.DeepEqual(g.XIDEvents, want) {
		t.Errorf("xids %+v", g.XIDEvents)
	}
	if g.XIDSource != "/var/log/kern.log" || g.XIDError != "" {
		t.Errorf("xid source %q error %q", g.XIDSource, g.XIDError)
	}
	if err := facts.Validate(f); err != nil {
		t.Errorf("facts do not validate: %v", err)
	}
}

func TestDGXH100Matrix(t *testing.T) {
	f := collectHost(t, dgxH100(), hostTree(t, "550.54.15", ""))
	d := f.GPU.Devices[0]
	if d.Architecture != "hopper" || d.MinDriverBranch != 525 {
		t.Errorf("H100: %q %d", d.Architecture, d.MinDriverBranch)
	}
	if !strings.Contains(f.GPU.XIDError, "no kernel log file") {
		t.Errorf("xid error %q", f.GPU.XIDError)
	}
}

func TestOfflineIsNotApplicable(t *testing.T) {
	fsys, closer, err := sysroot.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	f := facts.New(facts.KindRootfs, "x", now)
	err = domains.GPU(dgxA100()).Collect(context.Background(), &collect.Env{FS: fsys}, f)
	if st, _ := collect.Classify(err); st != facts.StatusNotApplicable || f.GPU != nil {
		t.Errorf("offline: status %s, gpu %+v", st, f.GPU)
	}
}

func TestInitFailures(t *testing.T) {
	for _, tc := range []struct {
		ret      nvml.Return
		status   string
		mismatch bool
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, facts.StatusUnavailable, false},
		{nvml.ERROR_DRIVER_NOT_LOADED, facts.StatusUnavailable, false},
		{nvml.ERROR_GPU_IS_LOST, facts.StatusUnavailable, false},
		{nvml.ERROR_LIB_RM_VERSION_MISMATCH, facts.StatusOK, true},
	} {
		t.Run(gpu.Symbol(tc.ret), func(t *testing.T) {
			s := dgxA100()
			s.InitFunc = func() nvml.Return { return tc.ret }
			f := collectHost(t, s, hostTree(t, "550.54.15", ""))
			if st := f.Collectors["gpu"]; st.Status != tc.status {
				t.Errorf("status %+v, want %s", st, tc.status)
			}
			if f.GPU == nil || f.GPU.Available || f.GPU.DriverMismatch != tc.mismatch {
				t.Fatalf("gpu %+v", f.GPU)
			}
			if !strings.Contains(f.GPU.Reason, gpu.Symbol(tc.ret)) {
				t.Errorf("reason %q does not name %s", f.GPU.Reason, gpu.Symbol(tc.ret))
			}
			if f.GPU.KernelModuleVersion != "550.54.15" {
				t.Errorf("kernel module version %q not read when NVML fails", f.GPU.KernelModuleVersion)
			}
		})
	}
}

// TestRealLibrary runs the collector over the real NVML binding. This machine
// has no NVIDIA driver, so Init must fail and the collector must say so.
func TestRealLibrary(t *testing.T) {
	f := collectHost(t, nvml.New(), hostTree(t, "", ""))
	if f.GPU == nil {
		t.Fatal("gpu facts not set")
	}
	if f.GPU.Available {
		t.Skip("an NVIDIA driver is present here; this test is for hosts without one")
	}
	if st := f.Collectors["gpu"]; st.Status != facts.StatusUnavailable || !strings.Contains(st.Reason, "ERROR_") {
		t.Errorf("status %+v, want unavailable naming an NVML error", st)
	}
	t.Logf("reason: %s", f.GPU.Reason)
}

func TestNotSupportedFieldsStayNil(t *testing.T) {
	s := dgxA100()
	d := device(s, 2)
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.ERROR_NOT_SUPPORTED }
	d.GetNvLinkStateFunc = func(int) (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_FUNCTION_NOT_FOUND }
	d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) {
		return nvml.ClocksThrottleReasonHwSlowdown | 1<<40, nvml.SUCCESS
	}
	s.SystemGetConfComputeStateFunc = func() (nvml.ConfComputeSystemState, nvml.Return) {
		return nvml.ConfComputeSystemState{}, nvml.ERROR_NOT_SUPPORTED
	}
	f := collectHost(t, s, hostTree(t, "550.54.15", ""))
	dev := f.GPU.Devices[2]
	if dev.RemappedRows != nil || len(dev.NVLink) != 0 || len(dev.Errors) != 0 {
		t.Errorf("remapped %+v nvlink %+v errors %q", dev.RemappedRows, dev.NVLink, dev.Errors)
	}
	if !slices.Equal(dev.Unsupported, []string{"retired_pages", "remapped_rows", "nvlink"}) {
		t.Errorf("unsupported %q", dev.Unsupported)
	}
	if !slices.Equal(dev.ThrottleReasons, []string{"hw_slowdown", "0x10000000000"}) {
		t.Errorf("throttle fallback %q", dev.ThrottleReasons)
	}
	if f.GPU.ConfCompute != nil || !slices.Equal(f.GPU.Unsupported, []string{"conf_compute"}) {
		t.Errorf("conf compute %+v unsupported %q", f.GPU.ConfCompute, f.GPU.Unsupported)
	}
}

// TestHungCallTimesOut: a call that never returns is abandoned at the
// deadline, and no further call is made, so the scan ends promptly.
func TestHungCallTimesOut(t *testing.T) {
	s := dgxA100()
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	calls := 0
	device(s, 1).GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
		<-block
		return 0, 0, nvml.SUCCESS
	}
	device(s, 2).GetUUIDFunc = func() (string, nvml.Return) { calls++; return "GPU-x", nvml.SUCCESS }
	s.ShutdownFunc = func() nvml.Return { calls++; return nvml.SUCCESS }
	f := collectHost(t, s, hostTree(t, "550.54.15", ""), gpu.WithCallTimeout(20*time.Millisecond))
	d := f.GPU.Devices[1]
	if d.ECC != nil || len(d.Errors) == 0 || d.Errors[0] != "ecc: NVML call GetEccMode timed out after 20ms" {
		t.Errorf("ecc %+v errors %q", d.ECC, d.Errors)
	}
	if calls != 0 {
		t.Errorf("%d calls made after a hung call, want 0", calls)
	}
	if !strings.Contains(strings.Join(f.GPU.Devices[2].Errors, "\n"), "skipped: an earlier NVML call timed out") {
		t.Errorf("later GPU errors %q", f.GPU.Devices[2].Errors)
	}
}

// TestPanickingCallIsAnError: a binding that panics costs one field, not the scan.
func TestPanickingCallIsAnError(t *testing.T) {
	s := dgxA100()
	device(s, 0).GetPowerUsageFunc = nil // the mock panics on an unset function
	f := collectHost(t, s, hostTree(t, "550.54.15", ""))
	d := f.GPU.Devices[0]
	if d.PowerW != nil || len(d.Errors) != 1 || !strings.Contains(d.Errors[0], "power: NVML call GetPowerUsage panicked") {
		t.Errorf("power %v errors %q", d.PowerW, d.Errors)
	}
	if d.PowerLimitW == nil {
		t.Error("the fields after a panic were not read")
	}
}

func TestFieldErrorsAreRecorded(t *testing.T) {
	s := dgxA100()
	device(s, 5).GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) { return 0, 0, nvml.ERROR_GPU_IS_LOST }
	f := collectHost(t, s, hostTree(t, "550.54.15", ""))
	d := f.GPU.Devices[5]
	if d.ECC != nil || !slices.Equal(d.Errors, []string{"ecc: GetEccMode: ERROR_GPU_IS_LOST"}) {
		t.Errorf("ecc %+v errors %q", d.ECC, d.Errors)
	}
}

func TestFactsRoundTrip(t *testing.T) {
	f := collectHost(t, dgxA100(), hostTree(t, "550.54.15", kernLog))
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := facts.ValidateJSON(data); err != nil {
		t.Fatal(err)
	}
}

func TestParseKernelModuleVersion(t *testing.T) {
	for _, tc := range []struct{ in, version, kind string }{
		{"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.261.03  Wed Jul 30 2025\nGCC version: 12\n", "535.261.03", "proprietary"},
		{"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  (dvs-builder@U16)\n", "570.86.15", "open"},
		{"NVRM version: NVIDIA UNIX aarch64 Kernel Module  550.54\n", "550.54", "proprietary"},
		{"NVRM version: garbage\n", "", ""},
		{"", "", ""},
	} {
		v, k := gpu.ParseKernelModuleVersion(tc.in)
		if v != tc.version || k != tc.kind {
			t.Errorf("%q: %q %q, want %q %q", tc.in, v, k, tc.version, tc.kind)
		}
	}
}
