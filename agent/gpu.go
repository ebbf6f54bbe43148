package agent

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuhost/gpuhost/agent/podresources"
	gpucheck "github.com/gpuhost/gpuhost/facts/gpu"
)

// containerCgroups are the cgroup path parts container runtimes and
// Kubernetes put their processes under: a GPU process in none of them runs
// outside every container.
var containerCgroups = []string{"kubepods", "docker-", "/docker/", "containerd", "cri-containerd", "libpod", "crio-", "/lxc/", "machine.slice/"}

// GPUSampler reads every GPU NVML sees, each time Sample is called, into the
// metrics of gpuFamilies: utilization, memory, power and energy,
// temperatures, clocks, throttle reasons, ECC, remapped rows, PCIe replays,
// NVLink traffic and errors, the last Xid, and the compute processes with
// the cgroup each runs in. With WithPodResources, each GPU's series name the
// container the kubelet gave the GPU to.
//
// It is a prometheus.Collector: a scrape sees the GPUs as the last sample
// found them, so a GPU that fell off the bus leaves no stale series behind.
type GPUSampler struct {
	lib      nvml.Interface
	hostRoot string
	hostname string
	log      *slog.Logger
	pods     podresources.Lister

	mu      sync.Mutex
	up      bool
	events  nvml.EventSet
	xidSeen map[string]bool
	lastXid map[string]float64
	totals  map[string]*total
	nvlink  map[string]nvlinkReading
	podErr  string

	snapMu   sync.RWMutex
	snapshot []prometheus.Metric

	xids     *prometheus.CounterVec
	errors   *prometheus.CounterVec
	count    prometheus.Gauge
	nvmlUp   prometheus.Gauge
	lastTime prometheus.Gauge
}

// GPUOption configures a GPUSampler.
type GPUOption func(*GPUSampler)

// WithPodResources labels each GPU's series with the namespace, pod and
// container the kubelet has allocated the GPU to, as listed by pods.
func WithPodResources(pods podresources.Lister) GPUOption {
	return func(s *GPUSampler) { s.pods = pods }
}

// NewGPUSampler samples through lib (nvml.New() on a host), reading
// processes' cgroups under hostRoot ("/" on the host, /host in a pod).
func NewGPUSampler(lib nvml.Interface, hostRoot string, log *slog.Logger, opts ...GPUOption) *GPUSampler {
	if log == nil {
		log = slog.Default()
	}
	host, _ := os.Hostname()
	s := &GPUSampler{
		lib: lib, hostRoot: hostRoot, hostname: host, log: log,
		xidSeen: map[string]bool{}, lastXid: map[string]float64{},
		totals: map[string]*total{}, nvlink: map[string]nvlinkReading{},
		xids: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuhost_gpu_xid_errors_total", Help: "Xid events NVML reported since the agent started, by GPU and Xid.",
		}, []string{"UUID", "xid"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuhost_gpu_sample_errors_total", Help: "NVML calls (and kubelet pod-resources reads) that failed while sampling, by call.",
		}, []string{"call"}),
		count: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuhost_gpus", Help: "GPUs NVML sees."}),
		nvmlUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpuhost_gpu_nvml_up", Help: "1 when NVML answered the last sample, 0 when it could not be initialized.",
		}),
		lastTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gpuhost_gpu_last_sample_timestamp_seconds", Help: "Unix time of the last GPU sample.",
		}),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Collectors are what the agent registers for the sampler.
func (s *GPUSampler) Collectors() []prometheus.Collector {
	return []prometheus.Collector{s, s.xids, s.errors, s.count, s.nvmlUp, s.lastTime}
}

// Describe sends the per-GPU metric descriptions.
func (s *GPUSampler) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range gpuFamilies {
		ch <- f.desc
	}
}

// Collect sends the per-GPU series of the last sample.
func (s *GPUSampler) Collect(ch chan<- prometheus.Metric) {
	s.snapMu.RLock()
	defer s.snapMu.RUnlock()
	for _, m := range s.snapshot {
		ch <- m
	}
}

func (s *GPUSampler) publish(ms []prometheus.Metric) {
	s.snapMu.Lock()
	s.snapshot = ms
	s.snapMu.Unlock()
}

// Sample reads every GPU once. NVML is initialized on the first call and
// again after a failure, so an agent started before the driver loaded
// begins sampling once it has.
func (s *GPUSampler) Sample(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastTime.Set(float64(time.Now().UnixMilli()) / 1000)
	if !s.up {
		if ret := s.lib.Init(); ret != nvml.SUCCESS {
			s.nvmlUp.Set(0)
			s.count.Set(0)
			s.publish(nil)
			return fmt.Errorf("initializing NVML: %s", s.lib.ErrorString(ret))
		}
		s.up = true
		s.watchXids()
	}
	n, ret := s.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		// The driver went away under us: start over next time.
		s.lib.Shutdown()
		s.up, s.events = false, nil
		s.nvmlUp.Set(0)
		s.publish(nil)
		return fmt.Errorf("counting GPUs: %s", s.lib.ErrorString(ret))
	}
	s.nvmlUp.Set(1)
	s.count.Set(float64(n))
	gpus := s.identify(n)
	holders := s.holders(ctx, gpus)
	driver, ret := s.lib.SystemGetDriverVersion()
	if !s.ok("SystemGetDriverVersion", ret) {
		driver = ""
	}
	b := &batch{}
	byUUID := map[string][]string{}
	for _, g := range gpus {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		h := holders[g.uuid]
		labels := []string{strconv.Itoa(g.index), g.uuid, g.bus, g.device, g.model, s.hostname,
			strings.ToValidUTF8(driver, "\uFFFD"), h.namespace, h.pod, h.container}
		s.sampleDevice(b, g, labels)
		byUUID[g.uuid] = labels
	}
	s.drainXids(byUUID)
	for uuid, labels := range byUUID {
		if v, ok := s.lastXid[uuid]; ok {
			b.add(familyByName["DCGM_FI_DEV_XID_ERRORS"], v, labels)
		}
	}
	s.publish(b.metrics)
	return nil
}

// gpu is one device and what identifies it in labels and to the kubelet.
type gpu struct {
	dev                      nvml.Device
	index, minor             int
	uuid, bus, device, model string
}

// identify takes a handle on each GPU and the names it goes by.
func (s *GPUSampler) identify(n int) []gpu {
	var gpus []gpu
	for i := 0; i < n; i++ {
		dev, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			s.errors.WithLabelValues("DeviceGetHandleByIndex").Inc()
			continue
		}
		g := gpu{dev: dev, index: i, minor: i}
		uuid, ret := dev.GetUUID()
		if !s.ok("GetUUID", ret) {
			uuid = "GPU-unknown-" + strconv.Itoa(i)
		}
		g.uuid = strings.ToValidUTF8(uuid, "\uFFFD")
		name, _ := dev.GetName()
		g.model = strings.ToValidUTF8(name, "\uFFFD")
		if p, ret := dev.GetPciInfo(); ret == nvml.SUCCESS {
			g.bus = gpucheck.BusID(p.BusId)
		}
		if m, ret := dev.GetMinorNumber(); ret == nvml.SUCCESS {
			g.minor = m
		}
		g.device = "nvidia" + strconv.Itoa(g.minor)
		gpus = append(gpus, g)
	}
	return gpus
}

// ok counts a failed call; NOT_SUPPORTED is an answer, not a failure.
func (s *GPUSampler) ok(call string, ret nvml.Return) bool {
	if ret == nvml.SUCCESS {
		return true
	}
	if ret != nvml.ERROR_NOT_SUPPORTED {
		s.errors.WithLabelValues(call).Inc()
	}
	return false
}

func (s *GPUSampler) sampleDevice(b *batch, g gpu, labels []string) {
	dev := g.dev
	gauge := func(name string, v float64) { b.add(familyByName[name], v, labels) }
	if u, ret := dev.GetUtilizationRates(); s.ok("GetUtilizationRates", ret) {
		gauge("DCGM_FI_DEV_GPU_UTIL", float64(u.Gpu))
		gauge("DCGM_FI_DEV_MEM_COPY_UTIL", float64(u.Memory))
	}
	if u, _, ret := dev.GetEncoderUtilization(); s.ok("GetEncoderUtilization", ret) {
		gauge("DCGM_FI_DEV_ENC_UTIL", float64(u))
	}
	if u, _, ret := dev.GetDecoderUtilization(); s.ok("GetDecoderUtilization", ret) {
		gauge("DCGM_FI_DEV_DEC_UTIL", float64(u))
	}
	s.sampleMemory(b, dev, labels)
	if p, ret := dev.GetPowerUsage(); s.ok("GetPowerUsage", ret) {
		gauge("DCGM_FI_DEV_POWER_USAGE", float64(p)/1000)
	}
	if e, ret := dev.GetTotalEnergyConsumption(); s.ok("GetTotalEnergyConsumption", ret) {
		s.counter(b, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", g.uuid, float64(e), labels)
	}
	if t, ret := dev.GetTemperature(nvml.TEMPERATURE_GPU); s.ok("GetTemperature", ret) {
		gauge("DCGM_FI_DEV_GPU_TEMP", float64(t))
	}
	if t, ret := dev.GetTemperatureThreshold(nvml.TEMPERATURE_THRESHOLD_SLOWDOWN); s.ok("GetTemperatureThreshold", ret) {
		gauge("gpuhost_gpu_slowdown_temperature_celsius", float64(t))
	}
	if c, ret := dev.GetClockInfo(nvml.CLOCK_SM); s.ok("GetClockInfo", ret) {
		gauge("DCGM_FI_DEV_SM_CLOCK", float64(c))
	}
	if c, ret := dev.GetClockInfo(nvml.CLOCK_MEM); s.ok("GetClockInfo", ret) {
		gauge("DCGM_FI_DEV_MEM_CLOCK", float64(c))
	}
	if r, ret := dev.GetCurrentClocksThrottleReasons(); s.ok("GetCurrentClocksThrottleReasons", ret) {
		gauge("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", float64(r))
	}
	if n, ret := dev.GetPcieReplayCounter(); s.ok("GetPcieReplayCounter", ret) {
		s.counter(b, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", g.uuid, float64(n), labels)
	}
	s.sampleErrors(b, g, labels)
	s.sampleFields(b, g, labels)
	s.sampleProcesses(b, dev, labels)
	if s.events != nil && !s.xidSeen[g.uuid] {
		if ret := dev.RegisterEvents(nvml.EventTypeXidCriticalError, s.events); s.ok("RegisterEvents", ret) {
			s.xidSeen[g.uuid] = true
		}
	}
}

// sampleMemory reads the framebuffer as DCGM does: through the v2 call,
// whose "used" leaves out what the driver reserves, and the v1 call on a
// driver too old for it.
func (s *GPUSampler) sampleMemory(b *batch, dev nvml.Device, labels []string) {
	gauge := func(name string, bytes uint64) { b.add(familyByName[name], float64(bytes>>20), labels) }
	if m, ret := dev.GetMemoryInfo_v2(); ret == nvml.SUCCESS {
		gauge("DCGM_FI_DEV_FB_USED", m.Used)
		gauge("DCGM_FI_DEV_FB_FREE", m.Free)
		gauge("DCGM_FI_DEV_FB_RESERVED", m.Reserved)
		return
	}
	if m, ret := dev.GetMemoryInfo(); s.ok("GetMemoryInfo", ret) {
		gauge("DCGM_FI_DEV_FB_USED", m.Used)
		gauge("DCGM_FI_DEV_FB_FREE", m.Free)
	}
}

func (s *GPUSampler) sampleErrors(b *batch, g gpu, labels []string) {
	if n, ret := g.dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC); s.ok("GetTotalEccErrors", ret) {
		s.counter(b, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", g.uuid, float64(n), labels)
	}
	if n, ret := g.dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); s.ok("GetTotalEccErrors", ret) {
		s.counter(b, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", g.uuid, float64(n), labels)
	}
	if corr, unc, _, failed, ret := g.dev.GetRemappedRows(); s.ok("GetRemappedRows", ret) {
		s.counter(b, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", g.uuid, float64(corr), labels)
		s.counter(b, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", g.uuid, float64(unc), labels)
		b.add(familyByName["DCGM_FI_DEV_ROW_REMAP_FAILURE"], boolFloat(failed), labels)
	}
}

func (s *GPUSampler) sampleProcesses(b *batch, dev nvml.Device, labels []string) {
	procs, ret := dev.GetComputeRunningProcesses()
	if !s.ok("GetComputeRunningProcesses", ret) {
		return
	}
	inContainer := 0
	for _, p := range procs {
		cg := s.cgroupOf(int(p.Pid))
		if inAContainer(cg) {
			inContainer++
		}
		b.add(familyByName["gpuhost_gpu_process_memory_bytes"], float64(p.UsedGpuMemory), labels,
			strconv.Itoa(int(p.Pid)), strings.ToValidUTF8(cg, "\uFFFD"))
	}
	b.add(familyByName["gpuhost_gpu_processes"], float64(len(procs)), labels)
	b.add(familyByName["gpuhost_gpu_container_processes"], float64(inContainer), labels)
}

// watchXids makes the event set Xid events arrive in; a driver without
// events leaves the Xid metrics unset rather than failing the sample.
func (s *GPUSampler) watchXids() {
	set, ret := s.lib.EventSetCreate()
	if !s.ok("EventSetCreate", ret) {
		return
	}
	s.events, s.xidSeen = set, map[string]bool{}
}

// drainXids takes the events that arrived since the last sample, without
// waiting.
func (s *GPUSampler) drainXids(byUUID map[string][]string) {
	if s.events == nil {
		return
	}
	for range 1024 {
		ev, ret := s.events.Wait(0)
		if ret != nvml.SUCCESS {
			// TIMEOUT: nothing more is waiting.
			return
		}
		if ev.Device == nil {
			continue
		}
		uuid, ret := ev.Device.GetUUID()
		if ret != nvml.SUCCESS {
			continue
		}
		s.xids.WithLabelValues(uuid, strconv.FormatUint(ev.EventData, 10)).Inc()
		if _, ok := byUUID[uuid]; ok {
			s.lastXid[uuid] = float64(ev.EventData)
		}
	}
}

// cgroupOf reads a process's cgroup v2 path from the host's /proc, or ""
// when the process is gone or the host's /proc is not there.
func (s *GPUSampler) cgroupOf(pid int) string {
	data, err := os.ReadFile(filepath.Join(s.hostRoot, "proc", strconv.Itoa(pid), "cgroup"))
	if err != nil || len(data) > 64<<10 {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// cgroup v2: "0::/path"; v1 lines name their controllers.
		if rest, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			return rest
		}
	}
	return ""
}

func inAContainer(cgroup string) bool {
	for _, c := range containerCgroups {
		if strings.Contains(cgroup, c) {
			return true
		}
	}
	return false
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
