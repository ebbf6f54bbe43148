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

	gpucheck "github.com/gpuhost/gpuhost/checks/gpu"
)

// GPUMetricNames are the metrics the GPU sampler exports. Where
// dcgm-exporter has a metric for the same value, it has the same name,
// unit and labels (gpu, UUID, pci_bus_id, device, modelName, Hostname), so
// dashboards and alerts written for it work on gpuhost's agent as they are.
var GPUMetricNames = []string{
	"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE",
	"DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK",
	"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
	"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
	"DCGM_FI_DEV_XID_ERRORS",
	"gpuhost_gpu_slowdown_temperature_celsius", "gpuhost_gpu_processes", "gpuhost_gpu_container_processes",
	"gpuhost_gpu_process_memory_bytes", "gpuhost_gpu_xid_errors_total", "gpuhost_gpus", "gpuhost_gpu_nvml_up",
	"gpuhost_gpu_last_sample_timestamp_seconds", "gpuhost_gpu_sample_errors_total",
}

// dcgmLabels are dcgm-exporter's labels of a per-GPU series.
var dcgmLabels = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"}

// containerCgroups are the cgroup path parts container runtimes and
// Kubernetes put their processes under: a GPU process in none of them runs
// outside every container.
var containerCgroups = []string{"kubepods", "docker-", "/docker/", "containerd", "cri-containerd", "libpod", "crio-", "/lxc/", "machine.slice/"}

// GPUSampler reads every GPU NVML sees, each time Sample is called, into
// Prometheus gauges: utilization, memory, power, temperature and its
// slowdown threshold, clocks, throttle reasons, ECC and remapped rows, the
// Xid events since the agent started, and the compute processes with the
// cgroup each runs in, so that a process can be tied to a container.
type GPUSampler struct {
	lib      nvml.Interface
	hostRoot string
	hostname string
	log      *slog.Logger

	mu       sync.Mutex
	up       bool
	events   nvml.EventSet
	xidSeen  map[string]bool
	gauges   map[string]*prometheus.GaugeVec
	xids     *prometheus.CounterVec
	errors   *prometheus.CounterVec
	count    prometheus.Gauge
	nvmlUp   prometheus.Gauge
	lastTime prometheus.Gauge
	lastXid  *prometheus.GaugeVec
}

// NewGPUSampler samples through lib (nvml.New() on a host), reading
// processes' cgroups under hostRoot ("/" on the host, /host in a pod).
func NewGPUSampler(lib nvml.Interface, hostRoot string, log *slog.Logger) *GPUSampler {
	if log == nil {
		log = slog.Default()
	}
	host, _ := os.Hostname()
	s := &GPUSampler{lib: lib, hostRoot: hostRoot, hostname: host, log: log, xidSeen: map[string]bool{}, gauges: map[string]*prometheus.GaugeVec{}}
	gauge := func(name, help string, extra ...string) {
		s.gauges[name] = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, append(append([]string{}, dcgmLabels...), extra...))
	}
	gauge("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).")
	gauge("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).")
	gauge("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).")
	gauge("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).")
	gauge("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).")
	gauge("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).")
	gauge("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).")
	gauge("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).")
	gauge("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "Current clock throttle reasons (bitmask of NVML's nvmlClocksThrottleReason).")
	gauge("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Total number of single-bit volatile ECC errors.")
	gauge("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Total number of double-bit volatile ECC errors.")
	gauge("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for correctable errors.")
	gauge("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for uncorrectable errors.")
	gauge("DCGM_FI_DEV_ROW_REMAP_FAILURE", "Whether remapping of rows has failed.")
	gauge("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.")
	gauge("gpuhost_gpu_slowdown_temperature_celsius", "Temperature at which the GPU slows its clocks down.")
	gauge("gpuhost_gpu_processes", "Compute processes running on the GPU.")
	gauge("gpuhost_gpu_container_processes", "Compute processes on the GPU that run inside a container (by their cgroup).")
	gauge("gpuhost_gpu_process_memory_bytes", "GPU memory a compute process holds, with its PID and cgroup.", "pid", "cgroup")
	s.xids = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuhost_gpu_xid_errors_total", Help: "Xid events NVML reported since the agent started, by GPU and Xid."}, []string{"UUID", "xid"})
	s.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuhost_gpu_sample_errors_total", Help: "NVML calls that failed while sampling, by call."}, []string{"call"})
	s.count = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuhost_gpus", Help: "GPUs NVML sees."})
	s.nvmlUp = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuhost_gpu_nvml_up", Help: "1 when NVML answered the last sample, 0 when it could not be initialized."})
	s.lastTime = prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuhost_gpu_last_sample_timestamp_seconds", Help: "Unix time of the last GPU sample."})
	s.lastXid = s.gauges["DCGM_FI_DEV_XID_ERRORS"]
	return s
}

// Collectors are what the agent registers for the sampler.
func (s *GPUSampler) Collectors() []prometheus.Collector {
	cs := []prometheus.Collector{s.xids, s.errors, s.count, s.nvmlUp, s.lastTime}
	for _, g := range s.gauges {
		cs = append(cs, g)
	}
	return cs
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
			s.reset()
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
		s.reset()
		return fmt.Errorf("counting GPUs: %s", s.lib.ErrorString(ret))
	}
	s.nvmlUp.Set(1)
	s.count.Set(float64(n))
	// A GPU that fell off the bus must not keep its last values.
	s.reset()
	byUUID := map[string][]string{}
	for i := 0; i < n; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		dev, ret := s.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			s.errors.WithLabelValues("DeviceGetHandleByIndex").Inc()
			continue
		}
		labels := s.sampleDevice(i, dev)
		byUUID[labels[1]] = labels
	}
	s.drainXids(byUUID)
	return nil
}

func (s *GPUSampler) reset() {
	for _, g := range s.gauges {
		if g != s.lastXid {
			g.Reset()
		}
	}
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

func (s *GPUSampler) sampleDevice(i int, dev nvml.Device) []string {
	uuid, ret := dev.GetUUID()
	if !s.ok("GetUUID", ret) {
		uuid = "GPU-unknown-" + strconv.Itoa(i)
	}
	name, _ := dev.GetName()
	bus := ""
	if p, ret := dev.GetPciInfo(); ret == nvml.SUCCESS {
		bus = gpucheck.BusID(p.BusId)
	}
	minor := i
	if m, ret := dev.GetMinorNumber(); ret == nvml.SUCCESS {
		minor = m
	}
	labels := []string{strconv.Itoa(i), uuid, bus, "nvidia" + strconv.Itoa(minor), name, s.hostname}
	set := func(metric string, v float64) { s.gauges[metric].WithLabelValues(labels...).Set(v) }
	if u, ret := dev.GetUtilizationRates(); s.ok("GetUtilizationRates", ret) {
		set("DCGM_FI_DEV_GPU_UTIL", float64(u.Gpu))
		set("DCGM_FI_DEV_MEM_COPY_UTIL", float64(u.Memory))
	}
	if m, ret := dev.GetMemoryInfo(); s.ok("GetMemoryInfo", ret) {
		set("DCGM_FI_DEV_FB_USED", float64(m.Used>>20))
		set("DCGM_FI_DEV_FB_FREE", float64(m.Free>>20))
	}
	if p, ret := dev.GetPowerUsage(); s.ok("GetPowerUsage", ret) {
		set("DCGM_FI_DEV_POWER_USAGE", float64(p)/1000)
	}
	if t, ret := dev.GetTemperature(nvml.TEMPERATURE_GPU); s.ok("GetTemperature", ret) {
		set("DCGM_FI_DEV_GPU_TEMP", float64(t))
	}
	if t, ret := dev.GetTemperatureThreshold(nvml.TEMPERATURE_THRESHOLD_SLOWDOWN); s.ok("GetTemperatureThreshold", ret) {
		set("gpuhost_gpu_slowdown_temperature_celsius", float64(t))
	}
	if c, ret := dev.GetClockInfo(nvml.CLOCK_SM); s.ok("GetClockInfo", ret) {
		set("DCGM_FI_DEV_SM_CLOCK", float64(c))
	}
	if c, ret := dev.GetClockInfo(nvml.CLOCK_MEM); s.ok("GetClockInfo", ret) {
		set("DCGM_FI_DEV_MEM_CLOCK", float64(c))
	}
	if r, ret := dev.GetCurrentClocksThrottleReasons(); s.ok("GetCurrentClocksThrottleReasons", ret) {
		set("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", float64(r))
	}
	if n, ret := dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC); s.ok("GetTotalEccErrors", ret) {
		set("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", float64(n))
	}
	if n, ret := dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); s.ok("GetTotalEccErrors", ret) {
		set("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", float64(n))
	}
	if corr, unc, _, failed, ret := dev.GetRemappedRows(); s.ok("GetRemappedRows", ret) {
		set("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", float64(corr))
		set("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", float64(unc))
		set("DCGM_FI_DEV_ROW_REMAP_FAILURE", boolFloat(failed))
	}
	if procs, ret := dev.GetComputeRunningProcesses(); s.ok("GetComputeRunningProcesses", ret) {
		inContainer := 0
		for _, p := range procs {
			cg := s.cgroupOf(int(p.Pid))
			if inAContainer(cg) {
				inContainer++
			}
			s.gauges["gpuhost_gpu_process_memory_bytes"].WithLabelValues(append(append([]string{}, labels...), strconv.Itoa(int(p.Pid)), cg)...).Set(float64(p.UsedGpuMemory))
		}
		set("gpuhost_gpu_processes", float64(len(procs)))
		set("gpuhost_gpu_container_processes", float64(inContainer))
	}
	if s.events != nil && !s.xidSeen[uuid] {
		if ret := dev.RegisterEvents(nvml.EventTypeXidCriticalError, s.events); s.ok("RegisterEvents", ret) {
			s.xidSeen[uuid] = true
		}
	}
	return labels
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
		xid := strconv.FormatUint(ev.EventData, 10)
		s.xids.WithLabelValues(uuid, xid).Inc()
		if labels, ok := byUUID[uuid]; ok {
			s.lastXid.WithLabelValues(labels...).Set(float64(ev.EventData))
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
