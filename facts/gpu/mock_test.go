package gpu_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/gpu"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/target"
	"github.com/gpuhost/gpuhost/target/collector"
	"github.com/gpuhost/gpuhost/target/domains"
)

// now is the clock every test collects at.
var now = time.Date(2025, 3, 8, 12, 0, 0, 0, time.UTC)

// healthy sets every NVML function the collector calls to a healthy answer:
// the dgx mocks leave ECC, retired pages, remapped rows, persistence, power,
// PCIe, NVLink, throttle reasons and confidential compute unset, and an unset
// mock function panics. A test injects one fault by replacing one function.
func healthy(s *server.Server) {
	s.SystemGetConfComputeStateFunc = func() (nvml.ConfComputeSystemState, nvml.Return) {
		return nvml.ConfComputeSystemState{CcFeature: nvml.CC_SYSTEM_FEATURE_DISABLED, DevToolsMode: nvml.CC_SYSTEM_DEVTOOLS_MODE_OFF, Environment: nvml.CC_SYSTEM_ENVIRONMENT_UNAVAILABLE}, nvml.SUCCESS
	}
	s.ErrorStringFunc = func(r nvml.Return) string { return r.Error() }
	for _, d := range s.Devices {
		dev := d.(*server.Device)
		dev.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			var p nvml.PciInfo
			for i, c := range []byte(dev.PciBusID) {
				p.BusId[i] = int8(c)
			}
			p.PciDeviceId = dev.Config.PciDeviceId
			return p, nvml.SUCCESS
		}
		dev.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
			return nvml.FEATURE_ENABLED, nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		dev.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { return 0, nvml.SUCCESS }
		// Ampere and later retire rows, not pages.
		dev.GetRetiredPagesFunc = func(nvml.PageRetirementCause) ([]uint64, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED }
		dev.GetRetiredPagesPendingStatusFunc = func() (nvml.EnableState, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
		dev.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.SUCCESS }
		dev.GetPersistenceModeFunc = func() (nvml.EnableState, nvml.Return) { return nvml.FEATURE_ENABLED, nvml.SUCCESS }
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 41, nvml.SUCCESS }
		dev.GetTemperatureThresholdFunc = func(nvml.TemperatureThresholds) (uint32, nvml.Return) { return 90, nvml.SUCCESS }
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 61500, nvml.SUCCESS }
		dev.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 400000, nvml.SUCCESS }
		dev.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return 4, nvml.SUCCESS }
		dev.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return 4, nvml.SUCCESS }
		dev.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
		dev.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
		// A100 SXM parts have 12 NVLinks; Hopper and Blackwell SXM, 18.
		links := 12
		if !strings.Contains(dev.Config.Name, "A100") {
			links = 18
		}
		dev.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
			if link >= links {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		dev.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return nvml.ClocksEventReasonGpuIdle, nvml.SUCCESS }
		dev.GetVbiosVersionFunc = func() (string, nvml.Return) { return "92.00.45.00.03", nvml.SUCCESS }
		dev.ValidateInforomFunc = func() nvml.Return { return nvml.SUCCESS }
	}
}

// dgxA100 is a healthy 8-GPU DGX A100 whose driver matches the loaded module.
func dgxA100() *server.Server {
	s := dgxa100.New()
	healthy(s)
	return s
}

func dgxH100() *server.Server {
	s := dgxh100.New()
	healthy(s)
	return s
}

func device(s *server.Server, i int) *server.Device { return s.Devices[i].(*server.Device) }

// hostTree writes a live host's files: the loaded module's version (the
// dgx mocks report driver 550.54.15) and a kernel log.
func hostTree(t testing.TB, module, kernLog string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if module != "" {
		write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  "+module+"  Fri Feb 16 23:25:20 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
	}
	if kernLog != "" {
		write("var/log/kern.log", kernLog)
	}
	return dir
}

// collectHost runs the gpu collector through the orchestrator, as a scan of
// the live host does, and returns the facts with the collector's status.
func collectHost(t testing.TB, lib nvml.Interface, dir string, opts ...gpu.Option) *facts.Facts {
	t.Helper()
	// The journal of the machine running the tests is not the mock host's.
	opts = append([]gpu.Option{gpu.WithClock(func() time.Time { return now }), gpu.WithJournal(nil)}, opts...)
	return collectHostWith(t, dir, domains.GPU(lib, opts...))
}

// collectHostWith runs the given collectors over dir as a live host.
func collectHostWith(t testing.TB, dir string, cs ...collector.Collector) *facts.Facts {
	t.Helper()
	fsys, closer, err := sysroot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return target.Collect(context.Background(), &collect.Env{FS: fsys, Live: true}, facts.KindHost, "dgx-01", target.Options{Collectors: cs, Now: now})
}
