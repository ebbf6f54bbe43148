package agent

import (
	"context"
	"encoding/binary"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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
		dev.GetEncoderUtilizationFunc = func() (uint32, uint32, nvml.Return) { return 0, 167000, nvml.SUCCESS }
		dev.GetDecoderUtilizationFunc = func() (uint32, uint32, nvml.Return) { return uint32(g.tick), 167000, nvml.SUCCESS }
		dev.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
			used := uint64(g.tick+1) << 30
			return nvml.Memory_v2{Total: 40 << 30, Reserved: 512 << 20, Used: used, Free: 40<<30 - 512<<20 - used}, nvml.SUCCESS
		}
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(100000 + 1000*g.tick), nvml.SUCCESS }
		// 100 W for 15 s a tick, in mJ, since the driver loaded.
		dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return uint64(9e8 + 1.5e6*g.tick), nvml.SUCCESS }
		dev.GetPcieReplayCounterFunc = func() (int, nvml.Return) { return i, nvml.SUCCESS }
		dev.GetFieldValuesFunc = func(fv []nvml.FieldValue) nvml.Return { return g.fieldValues(i, fv) }
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

// fieldValues answers NVML's field values as an A100 does: HBM at 50 C
// plus the tick, NVLink data counters growing by 1 GiB (1048576 KiB) each
// way per tick of 15 s, and GPU 5 counting a CRC flit error per tick.
func (g *fleetGPUs) fieldValues(i int, fv []nvml.FieldValue) nvml.Return {
	for k := range fv {
		v := &fv[k]
		v.NvmlReturn = uint32(nvml.SUCCESS)
		v.Timestamp = int64(1_800_000_000+15*g.tick) * 1_000_000
		v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
		var n uint64
		switch v.FieldId {
		case nvml.FI_DEV_MEMORY_TEMP:
			v.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
			n = uint64(50 + g.tick)
		case nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
			n = uint64(1<<30 + (1<<20)*g.tick)
		case nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL:
			if i == 5 {
				n = uint64(g.tick)
			}
		}
		binary.NativeEndian.PutUint64(v.Value[:], n)
	}
	return nvml.SUCCESS
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
	if got := strings.Join(names, ","); got != "DCGM_FI_DRIVER_VERSION,Hostname,UUID,container,device,gpu,modelName,namespace,pci_bus_id,pod" {
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
		{"DCGM_FI_DEV_FB_FREE", "2", 34*1024 - 512},
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

// The values dcgm-exporter has that NVML gives only through newer calls or
// field values: read as DCGM reads them.
func TestGPUSamplerReadsWhatDCGMReads(t *testing.T) {
	g := newFleetGPUs()
	s := NewGPUSampler(g, hostProc(t), quietLog())
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := gather(t, s)
	// No earlier reading: DCGM's NVLink bandwidth is 0 at first.
	if v := value(t, m, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "0"); v != 0 {
		t.Errorf("first NVLink bandwidth %v", v)
	}
	for _, l := range m["DCGM_FI_DEV_GPU_UTIL"][0].Label {
		if l.GetName() == "DCGM_FI_DRIVER_VERSION" && l.GetValue() != g.DriverVersion {
			t.Errorf("driver label %q, NVML says %q", l.GetValue(), g.DriverVersion)
		}
	}
	g.tick = 5
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	m = gather(t, s)
	for _, c := range []struct {
		metric, gpu string
		want        float64
	}{
		{"DCGM_FI_DEV_FB_RESERVED", "2", 512},
		{"DCGM_FI_DEV_MEMORY_TEMP", "4", 55},
		{"DCGM_FI_DEV_DEC_UTIL", "4", 5},
		{"DCGM_FI_DEV_ENC_UTIL", "4", 0},
		{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "1", 907_500_000},
		{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "7", 7},
		{"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "5", 5},
		{"DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "4", 0},
		// 2 x 5 GiB in KiB over the 75 s between the samples, / 1000, as DCGM.
		{"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "0", float64(10<<20) / 75 / 1000},
	} {
		if v := value(t, m, c.metric, c.gpu); v != c.want {
			t.Errorf("%s on GPU %s = %v, want %v", c.metric, c.gpu, v, c.want)
		}
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
// labels are kept for its dashboards, so promtool's naming advice on them is
// allowed: on its camelCase labels (modelName), which every GPU series
// carries, and on DCGM_FI_* counters without a _total suffix or named
// _COUNTER, which also shows that those are exported as counters.
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
	naming := []string{
		`label names should be written in 'snake_case' not 'camelCase'`,
		`counter metrics should have "_total" suffix`,
		`metric name should not include type 'counter'`,
	}
	suffixAdvice := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		advice := slices.ContainsFunc(naming[1:], func(n string) bool { return strings.HasSuffix(line, n) })
		if line == "" || strings.HasSuffix(line, naming[0]) || advice && strings.HasPrefix(line, "DCGM_FI_") {
			if strings.HasSuffix(line, naming[1]) {
				suffixAdvice++
			}
			continue
		}
		t.Errorf("promtool check metrics: %s", line)
	}
	counters := 0
	for _, f := range gpuFamilies {
		if f.kind == prometheus.CounterValue {
			counters++
		}
	}
	if suffixAdvice != counters {
		t.Errorf("promtool saw %d counters without _total, the families declare %d", suffixAdvice, counters)
	}
}

// NVML's volatile counters restart when the driver reloads under a running
// agent; the exported counters carry on from where they were, so rate()
// and increase() see no reset within one agent process.
func TestGPUCountersNeverGoDown(t *testing.T) {
	g := newFleetGPUs()
	g.tick = 10
	s := NewGPUSampler(g, hostProc(t), quietLog())
	sample := func() map[string][]*dto.Metric {
		t.Helper()
		if err := s.Sample(context.Background()); err != nil {
			t.Fatal(err)
		}
		return gather(t, s)
	}
	before := sample()
	if before["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"][0].Counter == nil {
		t.Fatal("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL is not a counter")
	}
	// The driver goes away for one sample and comes back with its counters
	// restarted: energy and ECC count from 0 again.
	count := g.DeviceGetCountFunc
	g.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_DRIVER_NOT_LOADED }
	if err := s.Sample(context.Background()); err == nil {
		t.Fatal("no error with the driver gone")
	}
	g.DeviceGetCountFunc = count
	g.tick = 2
	after := sample()
	for _, c := range []struct {
		metric, gpu string
		want        float64
	}{
		// 10 errors before the reload and 2 since.
		{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "3", 12},
		{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "0", (9e8 + 1.5e7) + (9e8 + 3e6)},
		// Counters NVML did not restart go on as NVML counts.
		{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "6", 6},
	} {
		if v := value(t, after, c.metric, c.gpu); v != c.want || v < value(t, before, c.metric, c.gpu) {
			t.Errorf("%s on GPU %s = %v after the reload (%v before), want %v", c.metric, c.gpu, v, value(t, before, c.metric, c.gpu), c.want)
		}
	}
}

// TestGPUSamplerOnThisMachinesGPUs samples the real NVML, where a driver is
// loaded: no call may fail (NOT_SUPPORTED is an answer), and every GPU has
// the series the dcgm-exporter dashboard reads.
func TestGPUSamplerOnThisMachinesGPUs(t *testing.T) {
	lib := nvml.New()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		t.Skipf("no NVIDIA driver here (NVML: %s)", ret.Error())
	}
	lib.Shutdown()
	s := NewGPUSampler(lib, "/", quietLog())
	for range 2 {
		if err := s.Sample(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	m := gather(t, s)
	for _, e := range m["gpuhost_gpu_sample_errors_total"] {
		t.Errorf("failed NVML call: %v", e)
	}
	n := int(m["gpuhost_gpus"][0].Gauge.GetValue())
	for _, name := range []string{"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"} {
		if len(m[name]) != n {
			t.Errorf("%s: %d series for %d GPUs", name, len(m[name]), n)
		}
	}
	for _, f := range gpuFamilies {
		t.Logf("%s: %d series", f.name, len(m[f.name]))
	}
}
