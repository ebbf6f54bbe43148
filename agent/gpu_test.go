package agent

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// fleetGPUs is a DGX A100 whose readings change with tick: utilization and
// memory grow, GPU 0 runs a process in a Kubernetes pod and GPU 1 one
// outside any container, and an Xid 79 arrives once.
type fleetGPUs struct {
	*server.Server
	tick   int
	events []nvml.EventData
}

func newFleetGPUs() *fleetGPUs {
	g := &fleetGPUs{Server: dgxa100.New()}
	g.ErrorStringFunc = func(r nvml.Return) string { return r.Error() }
	g.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
			if len(g.events) == 0 {
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
			ev := g.events[0]
			g.events = g.events[1:]
			return ev, nvml.SUCCESS
		}}, nvml.SUCCESS
	}
	for i, d := range g.Devices {
		dev := d.(*server.Device)
		dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: uint32(10*g.tick + i), Memory: uint32(g.tick)}, nvml.SUCCESS
		}
		dev.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
			used := uint64(g.tick+1) << 30
			return nvml.Memory{Total: 40 << 30, Used: used, Free: 40<<30 - used}, nvml.SUCCESS
		}
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(100000 + 1000*g.tick), nvml.SUCCESS }
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(40 + g.tick), nvml.SUCCESS }
		dev.GetTemperatureThresholdFunc = func(nvml.TemperatureThresholds) (uint32, nvml.Return) { return 88, nvml.SUCCESS }
		dev.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
			if c == nvml.CLOCK_SM {
				return 1410, nvml.SUCCESS
			}
			return 1215, nvml.SUCCESS
		}
		dev.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.SUCCESS }
		dev.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, _ nvml.EccCounterType) (uint64, nvml.Return) {
			if t == nvml.MEMORY_ERROR_TYPE_UNCORRECTED && i == 3 {
				return uint64(g.tick), nvml.SUCCESS
			}
			return 0, nvml.SUCCESS
		}
		dev.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.SUCCESS }
		dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
			switch i {
			case 0:
				return []nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 8 << 30}}, nvml.SUCCESS
			case 1:
				return []nvml.ProcessInfo{{Pid: 4343, UsedGpuMemory: 2 << 30}}, nvml.SUCCESS
			}
			return nil, nvml.SUCCESS
		}
		dev.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
	}
	return g
}

// hostProc writes the two processes' cgroups into a host root.
func hostProc(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	for pid, cg := range map[string]string{
		"4242": "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/cri-containerd-abcd.scope\n",
		"4343": "0::/user.slice/user-1000.slice/session-3.scope\n",
	} {
		dir := filepath.Join(root, "proc", pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(cg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func gather(t *testing.T, s *GPUSampler) map[string][]*dto.Metric {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*dto.Metric{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf.Metric
	}
	return out
}

// value is the metric's value on the GPU with that index.
func value(t *testing.T, m map[string][]*dto.Metric, name, gpu string) float64 {
	t.Helper()
	for _, s := range m[name] {
		for _, l := range s.Label {
			if l.GetName() == "gpu" && l.GetValue() == gpu {
				if s.Gauge != nil {
					return s.Gauge.GetValue()
				}
				return s.Counter.GetValue()
			}
		}
	}
	t.Fatalf("no %s for GPU %s", name, gpu)
	return 0
}

func TestGPUSamplerFollowsTheGPUs(t *testing.T) {
	g := newFleetGPUs()
	s := NewGPUSampler(g, hostProc(t), quietLog())
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := gather(t, s)
	if n := len(m["DCGM_FI_DEV_GPU_UTIL"]); n != 8 {
		t.Fatalf("%d GPUs sampled, want 8", n)
	}
	// dcgm-exporter's labels, so its dashboards find the series.
	var names []string
	for _, l := range m["DCGM_FI_DEV_GPU_TEMP"][0].Label {
		names = append(names, l.GetName())
	}
	if got := strings.Join(names, ","); got != "Hostname,UUID,device,gpu,modelName,pci_bus_id" {
		t.Errorf("labels %s", got)
	}
	if v := value(t, m, "DCGM_FI_DEV_FB_USED", "2"); v != 1024 {
		t.Errorf("FB used %v MiB, want 1024", v)
	}

	g.tick = 5
	g.events = []nvml.EventData{{Device: g.Devices[6], EventType: nvml.EventTypeXidCriticalError, EventData: 79}}
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	m = gather(t, s)
	for _, c := range []struct {
		metric, gpu string
		want        float64
	}{
		{"DCGM_FI_DEV_GPU_UTIL", "3", 53},
		{"DCGM_FI_DEV_FB_USED", "2", 6 * 1024},
		{"DCGM_FI_DEV_FB_FREE", "2", 34 * 1024},
		{"DCGM_FI_DEV_POWER_USAGE", "0", 105},
		{"DCGM_FI_DEV_GPU_TEMP", "0", 45},
		{"gpuhost_gpu_slowdown_temperature_celsius", "0", 88},
		{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "3", 5},
		{"DCGM_FI_DEV_XID_ERRORS", "6", 79},
		{"gpuhost_gpu_processes", "0", 1},
		{"gpuhost_gpu_container_processes", "0", 1},
		{"gpuhost_gpu_processes", "1", 1},
		{"gpuhost_gpu_container_processes", "1", 0},
	} {
		if v := value(t, m, c.metric, c.gpu); v != c.want {
			t.Errorf("%s on GPU %s = %v, want %v", c.metric, c.gpu, v, c.want)
		}
	}
	var cgroups []string
	for _, p := range m["gpuhost_gpu_process_memory_bytes"] {
		for _, l := range p.Label {
			if l.GetName() == "cgroup" {
				cgroups = append(cgroups, l.GetValue())
			}
		}
	}
	if len(cgroups) != 2 || !strings.Contains(strings.Join(cgroups, " "), "kubepods") {
		t.Errorf("process cgroups %v", cgroups)
	}
	if xids := m["gpuhost_gpu_xid_errors_total"]; len(xids) != 1 || xids[0].Counter.GetValue() != 1 {
		t.Errorf("xid counter %v", xids)
	}

	// A GPU falls off the bus: its series go, the count says so.
	g.DeviceGetCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	m = gather(t, s)
	if n := len(m["DCGM_FI_DEV_GPU_UTIL"]); n != 7 || m["gpuhost_gpus"][0].Gauge.GetValue() != 7 {
		t.Errorf("after losing a GPU: %d series, count %v", n, m["gpuhost_gpus"][0].Gauge.GetValue())
	}
}

func TestGPUSamplerWithoutADriver(t *testing.T) {
	g := newFleetGPUs()
	g.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	s := NewGPUSampler(g, t.TempDir(), quietLog())
	err := s.Sample(context.Background())
	if err == nil || !strings.Contains(err.Error(), "initializing NVML") {
		t.Fatalf("error %v", err)
	}
	m := gather(t, s)
	if up := m["gpuhost_gpu_nvml_up"][0].Gauge.GetValue(); up != 0 || len(m["DCGM_FI_DEV_GPU_UTIL"]) != 0 {
		t.Errorf("nvml_up %v with %d GPU series", up, len(m["DCGM_FI_DEV_GPU_UTIL"]))
	}
	// The driver loads later: the next sample starts working.
	g.InitFunc = func() nvml.Return { return nvml.SUCCESS }
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	if up := gather(t, s)["gpuhost_gpu_nvml_up"][0].Gauge.GetValue(); up != 1 {
		t.Errorf("nvml_up %v after the driver loaded", up)
	}
}

// BenchmarkSample8GPUs is one sample of a DGX A100's eight GPUs through
// go-nvml's mock: what the agent adds every --gpu-interval besides NVML's
// own time.
func BenchmarkSample8GPUs(b *testing.B) {
	s := NewGPUSampler(newFleetGPUs(), hostProc(b), quietLog())
	ctx := context.Background()
	for b.Loop() {
		if err := s.Sample(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// promtool's lint on the GPU exposition. dcgm-exporter's own names and
// labels are kept for its dashboards, so a complaint about the camelCase of
// its modelName label would be allowed; promtool makes none today.
func TestPromtoolAcceptsGPUMetrics(t *testing.T) {
	promtool := testutil.Tool(t, "promtool", "prometheus")
	g := newFleetGPUs()
	// An Xid and a failed call, so that every series is there.
	g.events = []nvml.EventData{{Device: g.Devices[0], EventType: nvml.EventTypeXidCriticalError, EventData: 48}}
	g.Devices[1].(*server.Device).GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	s := NewGPUSampler(g, hostProc(t), quietLog())
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collectors()...)
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, name := range GPUMetricNames {
		if !strings.Contains(body, "# TYPE "+name+" ") {
			t.Errorf("the exposition lacks %s", name)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	out, _ := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" && !strings.Contains(line, `label names should be written in 'snake_case' not 'camelCase'`) {
			t.Errorf("promtool check metrics: %s", line)
		}
	}
}
