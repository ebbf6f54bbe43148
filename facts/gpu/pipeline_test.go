package gpu_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/gpu"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
	"github.com/gpuhost/gpuhost/target/domains"
)

// fleetParams are what a DGX fleet would pin.
var fleetParams = map[string]any{
	"gpu_driver_version": "550.54.15",
	"gpu_expected_count": 8,
	"gpu_mig":            false,
}

func newScanner(t testing.TB) *scan.Scanner {
	t.Helper()
	e, err := scan.Pack{}.Engine(context.Background(), engine.WithParams(fleetParams))
	if err != nil {
		t.Fatal(err)
	}
	return scan.New(e)
}

func scanFacts(t testing.TB, s *scan.Scanner, f *facts.Facts) map[string]reports.Result {
	t.Helper()
	rep, err := s.Facts(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]reports.Result{}
	for _, r := range rep.Results {
		if strings.HasPrefix(r.ID, "GH-GPU-") {
			out[r.ID] = r
		}
	}
	return out
}

// liveChecks are the GPU checks a healthy DGX must pass; the image-side ones
// (GH-GPU-015..017) need the gpu_driver collector, which these tests do not run.
// cleanLog has only an application fault (Xid 13), which is not critical.
const cleanLog = "Mar  8 10:12:00 dgx-01 kernel: [ 1300.0] NVRM: Xid (PCI:0000:04:00): 13, pid=99, name=app, Graphics Exception\n"

var liveChecks = []string{
	"GH-GPU-001", "GH-GPU-002", "GH-GPU-003", "GH-GPU-004", "GH-GPU-005", "GH-GPU-006",
	"GH-GPU-007", "GH-GPU-008", "GH-GPU-009", "GH-GPU-010", "GH-GPU-011", "GH-GPU-012",
	"GH-GPU-014", "GH-GPU-018", "GH-GPU-019", "GH-GPU-021", "GH-GPU-023", "GH-GPU-024",
	"GH-GPU-025",
}

func TestPipelineHealthyDGX(t *testing.T) {
	s := newScanner(t)
	for name, mk := range map[string]func() *server.Server{"dgxa100": dgxA100, "dgxh100": dgxH100} {
		t.Run(name, func(t *testing.T) {
			res := scanFacts(t, s, collectHost(t, mk(), hostTree(t, "550.54.15", cleanLog)))
			for _, id := range liveChecks {
				if r := res[id]; r.Status != reports.StatusPass {
					t.Errorf("%s %s: %s %q", id, r.Title, r.Status, r.Messages)
				}
			}
			if r := res["GH-GPU-013"]; r.Status != reports.StatusSkip {
				t.Errorf("GH-GPU-013 (CC not required): %s %q", r.Status, r.Messages)
			}
		})
	}
}

// TestPipelineFaults injects one fault at a time into a healthy DGX A100 and
// expects exactly the matching check to fail, naming the GPU.
func TestPipelineFaults(t *testing.T) {
	s := newScanner(t)
	const gpuIdx = 3
	cases := []struct {
		name   string
		id     string
		module string // loaded kernel module version
		inject func(s *server.Server, d *server.Device)
		want   string // in the message, after "GPU 3 (<uuid>)"
	}{
		{"ecc off", "GH-GPU-003", "550.54.15", func(_ *server.Server, d *server.Device) {
			d.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
				return nvml.FEATURE_DISABLED, nvml.FEATURE_DISABLED, nvml.SUCCESS
			}
		}, "runs with ECC off"},
		{"pending row remap", "GH-GPU-007", "550.54.15", func(_ *server.Server, d *server.Device) {
			d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 1, true, false, nvml.SUCCESS }
		}, "has a row remap pending a GPU reset"},
		{"degraded pcie", "GH-GPU-010", "550.54.15", func(_ *server.Server, d *server.Device) {
			d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 8, nvml.SUCCESS }
		}, "PCIe link is degraded: Gen4 x8"},
		{"uncorrected volatile ecc", "GH-GPU-004", "550.54.15", func(_ *server.Server, d *server.Device) {
			d.GetTotalEccErrorsFunc = func(_ nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
				if c == nvml.VOLATILE_ECC {
					return 2, nvml.SUCCESS
				}
				return 7, nvml.SUCCESS
			}
		}, "has 2 uncorrected ECC errors"},
		{"persistence off", "GH-GPU-008", "550.54.15", func(_ *server.Server, d *server.Device) {
			d.GetPersistenceModeFunc = func() (nvml.EnableState, nvml.Return) { return nvml.FEATURE_DISABLED, nvml.SUCCESS }
		}, "persistence mode off"},
		{"hot", "GH-GPU-012", "550.54.15", func(_ *server.Server, d *server.Device) {
			d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 85, nvml.SUCCESS }
		}, "is at 85C"},
		{"nvlink down", "GH-GPU-021", "550.54.15", func(_ *server.Server, d *server.Device) {
			d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
				switch {
				case link >= 12:
					return 0, nvml.ERROR_INVALID_ARGUMENT
				case link == 5:
					return nvml.FEATURE_DISABLED, nvml.SUCCESS
				}
				return nvml.FEATURE_ENABLED, nvml.SUCCESS
			}
		}, "NVLink 5 not active; 12 active links are wanted on Mock NVIDIA A100-SXM4-40GB"},
		{"hardware slowdown", "GH-GPU-023", "550.54.15", func(_ *server.Server, d *server.Device) {
			d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
				return nvml.ClocksEventReasonSwPowerCap | nvml.ClocksThrottleReasonHwSlowdown, nvml.SUCCESS
			}
		}, "runs with its clocks held down: hw_slowdown"},
		{"corrupt inforom", "GH-GPU-024", "550.54.15", func(_ *server.Server, d *server.Device) {
			d.ValidateInforomFunc = func() nvml.Return { return nvml.ERROR_CORRUPTED_INFOROM }
		}, "fails InfoROM validation"},
		{"odd vbios", "GH-GPU-025", "550.54.15", func(_ *server.Server, d *server.Device) {
			d.GetVbiosVersionFunc = func() (string, nvml.Return) { return "92.00.36.00.02", nvml.SUCCESS }
		}, "runs VBIOS 92.00.36.00.02, unlike the 7 other Mock NVIDIA A100-SXM4-40GB GPUs on the node, which run 92.00.45.00.03"},
		{"query fails", "GH-GPU-019", "550.54.15", func(_ *server.Server, d *server.Device) {
			d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.ERROR_CORRUPTED_INFOROM }
		}, "remapped_rows: GetRemappedRows: ERROR_CORRUPTED_INFOROM"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := dgxA100()
			d := device(srv, gpuIdx)
			tc.inject(srv, d)
			res := scanFacts(t, s, collectHost(t, srv, hostTree(t, tc.module, cleanLog)))
			r := res[tc.id]
			wantMsg := fmt.Sprintf("GPU %d (%s)", gpuIdx, d.UUID)
			if r.Status != reports.StatusFail || len(r.Messages) != 1 || !strings.Contains(r.Messages[0], wantMsg) || !strings.Contains(r.Messages[0], tc.want) {
				t.Errorf("%s: %s %q; want one failure naming %q and %q", tc.id, r.Status, r.Messages, wantMsg, tc.want)
			}
			for _, id := range liveChecks {
				if id != tc.id && res[id].Status != reports.StatusPass {
					t.Errorf("%s also %s: %q", id, res[id].Status, res[id].Messages)
				}
			}
		})
	}
}

// TestPipelineDriverMismatch: the loaded module differs from the library, as
// NVML sees it, and as NVML refusing to start.
func TestPipelineDriverMismatch(t *testing.T) {
	s := newScanner(t)
	res := scanFacts(t, s, collectHost(t, dgxA100(), hostTree(t, "535.261.03", "")))
	if r := res["GH-GPU-002"]; r.Status != reports.StatusFail || !strings.Contains(strings.Join(r.Messages, "\n"), "kernel module 535.261.03 is loaded but the NVML library is 550.54.15") {
		t.Errorf("GH-GPU-002: %s %q", r.Status, r.Messages)
	}

	srv := dgxA100()
	srv.InitFunc = func() nvml.Return { return nvml.ERROR_LIB_RM_VERSION_MISMATCH }
	res = scanFacts(t, s, collectHost(t, srv, hostTree(t, "535.261.03", "")))
	if r := res["GH-GPU-002"]; r.Status != reports.StatusFail || !strings.Contains(strings.Join(r.Messages, "\n"), "ERROR_LIB_RM_VERSION_MISMATCH") {
		t.Errorf("GH-GPU-002 on init mismatch: %s %q", r.Status, r.Messages)
	}
	// Without NVML nothing can be said about the GPUs: the device checks
	// skip, naming why, rather than pass on an empty device list.
	if r := res["GH-GPU-003"]; r.Status != reports.StatusSkip || !strings.Contains(strings.Join(r.Messages, "\n"), "ERROR_LIB_RM_VERSION_MISMATCH") {
		t.Errorf("GH-GPU-003 on init mismatch: %s %q", r.Status, r.Messages)
	}
}

// TestPipelineNoDriver: a host without the NVIDIA library skips every
// device check with NVML's reason, while the host's params say it has eight
// GPUs: that is itself a failure (GH-GPU-020), and the kernel log is still
// judged (GH-GPU-014), since it needs no NVML.
func TestPipelineNoDriver(t *testing.T) {
	srv := dgxA100()
	srv.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	res := scanFacts(t, newScanner(t), collectHost(t, srv, hostTree(t, "", cleanLog)))
	for _, id := range liveChecks {
		r := res[id]
		switch id {
		case "GH-GPU-014":
			if r.Status != reports.StatusPass {
				t.Errorf("%s on a log without critical Xids: %s %q", id, r.Status, r.Messages)
			}
		default:
			if r.Status != reports.StatusSkip || !strings.Contains(strings.Join(r.Messages, "\n"), "ERROR_LIBRARY_NOT_FOUND") {
				t.Errorf("%s: %s %q", id, r.Status, r.Messages)
			}
		}
	}
	if r := res["GH-GPU-020"]; r.Status != reports.StatusFail || !strings.Contains(r.Messages[0], "params.gpu_expected_count is 8") {
		t.Errorf("GH-GPU-020: %s %q", r.Status, r.Messages)
	}
}

// TestPipelinePCIGPUsWithNVMLDown: NVML fails on a host whose PCI bus shows
// NVIDIA GPUs. The GPU checks fail, naming NVML's error and the functions,
// and the count comes from the bus.
func TestPipelinePCIGPUsWithNVMLDown(t *testing.T) {
	srv := dgxA100()
	srv.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }
	dir := hostTree(t, "", "Mar  8 10:11:12 dgx-01 kernel: NVRM: Xid (PCI:0000:07:00): 79, pid=1, name=x, GPU has fallen off the bus.\n")
	addSysfs(t, dir, map[string][3]string{
		"0000:07:00.0": {"0x10de", "0x20b2", "0x030200"},
		"0000:0f:00.0": {"0x10de", "0x20b2", "0x030200"},
	}, nil)
	f := collectHostWith(t, dir, domains.PCI(), domains.GPU(srv, gpu.WithClock(func() time.Time { return now }), gpu.WithJournal(nil)))
	res := scanFacts(t, newScanner(t), f)
	if r := res["GH-GPU-020"]; r.Status != reports.StatusFail || len(r.Messages) != 1 ||
		!strings.Contains(r.Messages[0], "ERROR_DRIVER_NOT_LOADED") || !strings.Contains(r.Messages[0], "0000:07:00.0 0x10de:0x20b2, 0000:0f:00.0 0x10de:0x20b2") {
		t.Errorf("GH-GPU-020: %s %q", r.Status, r.Messages)
	}
	if r := res["GH-GPU-011"]; r.Status != reports.StatusFail || len(r.Messages) != 1 || r.Messages[0] != "NVML is unavailable; the PCI bus shows 2 NVIDIA GPUs; want 8" {
		t.Errorf("GH-GPU-011: %s %q", r.Status, r.Messages)
	}
	if r := res["GH-GPU-014"]; r.Status != reports.StatusFail || len(r.Messages) != 1 || !strings.HasPrefix(r.Messages[0], "the GPU at PCI 0000:07:00 logged Xid 79") {
		t.Errorf("GH-GPU-014: %s %q", r.Status, r.Messages)
	}
}

func TestPipelineXID(t *testing.T) {
	srv := dgxA100()
	res := scanFacts(t, newScanner(t), collectHost(t, srv, hostTree(t, "550.54.15",
		"Mar  8 10:11:12 dgx-01 kernel: NVRM: Xid (PCI:0000:03:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n")))
	want := fmt.Sprintf("GPU 3 (%s) logged Xid 79 (GPU has fallen off the bus)", device(srv, 3).UUID)
	if r := res["GH-GPU-014"]; r.Status != reports.StatusFail || len(r.Messages) != 1 || !strings.HasPrefix(r.Messages[0], want) {
		t.Errorf("GH-GPU-014: %s %q; want %q", r.Status, r.Messages, want)
	}
}

// BenchmarkCollectDGX collects a mock 8-GPU DGX A100 (target: < 20 ms).
func BenchmarkCollectDGX(b *testing.B) {
	srv := dgxA100()
	dir := hostTree(b, "550.54.15", kernLog)
	b.ResetTimer()
	for b.Loop() {
		f := collectHost(b, srv, dir)
		if !f.GPU.Available {
			b.Fatal(f.GPU.Reason)
		}
	}
}

// BenchmarkEvaluateDGX evaluates the whole pack, GPU checks included, over
// one DGX's facts (target for the GPU checks: < 1 ms per host).
func BenchmarkEvaluateDGX(b *testing.B) {
	s := newScanner(b)
	f := collectHost(b, dgxA100(), hostTree(b, "550.54.15", kernLog))
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Facts(ctx, f); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPrefix selects the checks BenchmarkEvaluateGPUChecks loads.
var benchPrefix = cmp.Or(os.Getenv("GPUHOST_BENCH_PREFIX"), "gpu/")

// BenchmarkEvaluateGPUChecks evaluates only the GPU checks (facts/gpu, the pack's gpu/)
// over one DGX's facts: the cost they add per host (target: < 1 ms).
func BenchmarkEvaluateGPUChecks(b *testing.B) {
	src := gpuOnly(b, benchPrefix)
	e, err := engine.New(context.Background(), engine.WithSource(src), engine.WithParams(fleetParams))
	if err != nil {
		b.Fatal(err)
	}
	if n := len(e.Checks()); benchPrefix == "gpu/" && n != 19 {
		b.Fatalf("%d checks, want the 19 GPU checks", n)
	}
	s := scan.New(e)
	f := collectHost(b, dgxA100(), hostTree(b, "550.54.15", kernLog))
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Facts(ctx, f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvaluateOneCheck is the engine's fixed cost per host (facts to
// AST, report), measured with a single GPU check, for comparison.
func BenchmarkEvaluateOneCheck(b *testing.B) {
	benchPrefix = "gpu/nouveau_blacklisted"
	defer func() { benchPrefix = "gpu/" }()
	BenchmarkEvaluateGPUChecks(b)
}
