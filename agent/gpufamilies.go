package agent

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// GPUMetricNames are the metrics the GPU sampler exports. Where
// dcgm-exporter has a metric for the same value, it has the same name, type,
// help text, unit and labels, so dashboards and alerts written for it work
// on gpuhost's agent as they are.
var GPUMetricNames = append(familyNames(),
	"gpuhost_gpu_xid_errors_total", "gpuhost_gpus", "gpuhost_gpu_nvml_up",
	"gpuhost_gpu_last_sample_timestamp_seconds", "gpuhost_gpu_sample_errors_total",
)

// DCGMNeedsProfiling are dcgm-exporter's default metrics that only DCGM's
// profiling module measures (from the GPU's performance counters, which NVML
// does not read): the agent does not export them under any name.
var DCGMNeedsProfiling = []string{
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
	"DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES",
}

// gpuLabels are the labels of every per-GPU series, in dcgm-exporter's
// order: the GPU (gpu, UUID, pci_bus_id, device, modelName, Hostname), the
// driver (dcgm-exporter turns its "label" field DCGM_FI_DRIVER_VERSION into a
// label of that name), and the container holding the GPU (namespace, pod,
// container, empty when none does).
var gpuLabels = []string{
	"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname",
	"DCGM_FI_DRIVER_VERSION", "namespace", "pod", "container",
}

// family is one per-GPU metric.
type family struct {
	name, help string
	kind       prometheus.ValueType
	desc       *prometheus.Desc
}

// gpuFamilies are the per-GPU metrics. Names, types and help texts of the
// DCGM_FI_* ones are those of dcgm-exporter's etc/default-counters.csv
// (release 4.5.3-4.8.2), where a counter is a cumulative value of NVML's
// and a gauge the rest. Beyond its defaults: the volatile ECC totals and the
// NVLink error totals, which it lists commented out with the types given
// here, and DCGM_FI_DEV_CLOCK_THROTTLE_REASONS, a bitmask.
//
// DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL is the one departure. dcgm-exporter
// declares it a counter, but DCGM's value is a rate: the growth of NVML's
// NVLink data counters (RX plus TX, KiB) since its previous reading, per
// second, divided by 1000 (DCGM's DcgmCacheManager::ReadAndCacheNvLinkBandwidth,
// unit "MB/s" in dcgm_fields.cpp). The agent computes the same value, so a
// panel plotting it reads the same, and declares it a gauge, since a counter
// must never go down.
var gpuFamilies = []*family{
	gaugeFamily("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz)."),
	gaugeFamily("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz)."),
	gaugeFamily("DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C)."),
	gaugeFamily("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."),
	gaugeFamily("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."),
	counterFamily("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ)."),
	counterFamily("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries."),
	gaugeFamily("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
	gaugeFamily("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %)."),
	gaugeFamily("DCGM_FI_DEV_ENC_UTIL", "Encoder utilization (in %)."),
	gaugeFamily("DCGM_FI_DEV_DEC_UTIL", "Decoder utilization (in %)."),
	gaugeFamily("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered."),
	gaugeFamily("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."),
	gaugeFamily("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
	gaugeFamily("DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB)."),
	counterFamily("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Total number of single-bit volatile ECC errors."),
	counterFamily("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Total number of double-bit volatile ECC errors."),
	counterFamily("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "Total number of NVLink flow-control CRC errors."),
	counterFamily("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "Total number of NVLink data CRC errors."),
	counterFamily("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "Total number of NVLink retries."),
	counterFamily("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "Total number of NVLink recovery errors."),
	gaugeFamily("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "NVLink data received and transmitted over all links (in MB/s, as DCGM computes it)."),
	counterFamily("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for uncorrectable errors"),
	counterFamily("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for correctable errors"),
	gaugeFamily("DCGM_FI_DEV_ROW_REMAP_FAILURE", "Whether remapping of rows has failed"),
	gaugeFamily("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "Current clock throttle reasons (bitmask of NVML's nvmlClocksThrottleReason)."),
	gaugeFamily("gpuhost_gpu_slowdown_temperature_celsius", "Temperature at which the GPU slows its clocks down."),
	gaugeFamily("gpuhost_gpu_processes", "Compute processes running on the GPU."),
	gaugeFamily("gpuhost_gpu_container_processes", "Compute processes on the GPU that run inside a container (by their cgroup)."),
	gaugeFamily("gpuhost_gpu_process_memory_bytes", "GPU memory a compute process holds, with its PID and cgroup.", "pid", "cgroup"),
}

// familyByName indexes gpuFamilies for the sampler.
var familyByName = func() map[string]*family {
	m := make(map[string]*family, len(gpuFamilies))
	for _, f := range gpuFamilies {
		m[f.name] = f
	}
	return m
}()

func gaugeFamily(name, help string, extra ...string) *family {
	return newFamily(name, help, prometheus.GaugeValue, extra)
}

func counterFamily(name, help string) *family {
	return newFamily(name, help, prometheus.CounterValue, nil)
}

func newFamily(name, help string, kind prometheus.ValueType, extra []string) *family {
	labels := append(slices.Clone(gpuLabels), extra...)
	return &family{name: name, help: help, kind: kind, desc: prometheus.NewDesc(name, help, labels, nil)}
}

func familyNames() []string {
	names := make([]string, len(gpuFamilies))
	for i, f := range gpuFamilies {
		names[i] = f.name
	}
	return names
}
