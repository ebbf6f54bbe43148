package agent

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/prometheus/client_golang/prometheus"
)

// batch gathers one sample's series.
type batch struct{ metrics []prometheus.Metric }

// add keeps one value. A label NVML or the kubelet filled with something
// Prometheus refuses drops that series, not the sample.
func (b *batch) add(f *family, v float64, labels []string, extra ...string) {
	if len(extra) > 0 {
		labels = append(append(make([]string, 0, len(labels)+len(extra)), labels...), extra...)
	}
	m, err := prometheus.NewConstMetric(f.desc, f.kind, v, labels...)
	if err == nil {
		b.metrics = append(b.metrics, m)
	}
}

// total is one of NVML's cumulative counters on one GPU as the agent
// exports it.
//
// NVML's own value is exported as it is (the value dcgm-exporter shows), by
// a const metric from the sample rather than a CounterVec, for two reasons:
// a counter's value belongs to the GPU, not to the label set, so when
// another pod takes the GPU its new series starts at the GPU's total as
// dcgm-exporter's does; and NVML's value is what a CounterVec would have to
// be advanced to anyway. The one thing NVML does that a counter must not is
// go down: its volatile counters restart when the driver reloads under a
// running agent. Then the agent counts what NVML counts after the restart
// on top of what it had, so within one agent process the series never
// decreases.
type total struct{ value, last float64 }

// counter exports raw, NVML's value of a cumulative counter of the GPU
// uuid, under the family name. The totals are kept per GPU UUID, a set a
// host bounds.
func (s *GPUSampler) counter(b *batch, name, uuid string, raw float64, labels []string) {
	key := name + "\x00" + uuid
	t := s.totals[key]
	switch {
	case t == nil:
		t = &total{value: raw}
		s.totals[key] = t
	case raw >= t.last:
		t.value += raw - t.last
	default:
		t.value += raw
	}
	t.last = raw
	b.add(familyByName[name], t.value, labels)
}

// nvlinkReading is the last reading of NVML's NVLink data counters (RX plus
// TX over all links, in KiB) on one GPU, and when NVML took it.
type nvlinkReading struct {
	kib uint64
	at  time.Time
}

// allLinks is the scope NVML reads as every NVLink of the GPU.
const allLinks = math.MaxUint32

// fieldCounters are the cumulative NVML fields exported as they are.
var fieldCounters = map[uint32]string{
	nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL: "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
	nvml.FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL: "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
	nvml.FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL:   "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
	nvml.FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL: "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
}

// sampleFields reads, in one NVML call, the values NVML has only as field
// values: the memory temperature, the NVLink error totals, and the NVLink
// data counters the bandwidth is worked out from. These are the NVML fields
// DCGM reads for the same DCGM_FI_* fields (dcgm_fields.cpp).
func (s *GPUSampler) sampleFields(b *batch, g gpu, labels []string) {
	fv := []nvml.FieldValue{
		{FieldId: nvml.FI_DEV_MEMORY_TEMP},
		{FieldId: nvml.FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL},
		{FieldId: nvml.FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL},
		{FieldId: nvml.FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL},
		{FieldId: nvml.FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL},
		{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ScopeId: allLinks},
		{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ScopeId: allLinks},
	}
	if !s.ok("GetFieldValues", g.dev.GetFieldValues(fv)) {
		return
	}
	var kib uint64
	var at time.Time
	throughput := 0
	for _, v := range fv {
		if !s.ok("GetFieldValues", nvml.Return(v.NvmlReturn)) {
			continue
		}
		switch v.FieldId {
		case nvml.FI_DEV_MEMORY_TEMP:
			// NVML has declared this value a double while filling it as an
			// unsigned int (DCGM reads it as one whatever the type says),
			// and above 200 C it is no reading.
			if t := binary.NativeEndian.Uint32(v.Value[:4]); t <= 200 {
				b.add(familyByName["DCGM_FI_DEV_MEMORY_TEMP"], float64(t), labels)
			}
		case nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
			kib += fieldUint(v)
			if ts := time.UnixMicro(v.Timestamp); v.Timestamp > 0 && ts.After(at) {
				at = ts
			}
			throughput++
		default:
			s.counter(b, fieldCounters[v.FieldId], g.uuid, float64(fieldUint(v)), labels)
		}
	}
	if throughput == 2 {
		if at.IsZero() {
			at = time.Now()
		}
		b.add(familyByName["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"], s.nvlinkRate(g.uuid, kib, at), labels)
	}
}

// nvlinkRate is DCGM's NVLink bandwidth: the growth of the data counters
// since the last reading, per second, divided by 1000. With no earlier
// reading, or counters at zero or gone back, DCGM publishes 0, and so does
// the agent.
func (s *GPUSampler) nvlinkRate(uuid string, kib uint64, at time.Time) float64 {
	prev, seen := s.nvlink[uuid]
	s.nvlink[uuid] = nvlinkReading{kib: kib, at: at}
	secs := at.Sub(prev.at).Seconds()
	if !seen || kib == 0 || kib < prev.kib || secs <= 0 {
		return 0
	}
	return float64(kib-prev.kib) / secs / 1000
}

// fieldUint reads a field value NVML filled as an integer of any width.
func fieldUint(v nvml.FieldValue) uint64 {
	switch nvml.ValueType(v.ValueType) {
	case nvml.VALUE_TYPE_DOUBLE:
		return uint64(math.Float64frombits(binary.NativeEndian.Uint64(v.Value[:])))
	case nvml.VALUE_TYPE_UNSIGNED_INT, nvml.VALUE_TYPE_SIGNED_INT:
		return uint64(binary.NativeEndian.Uint32(v.Value[:4]))
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return uint64(binary.NativeEndian.Uint16(v.Value[:2]))
	default:
		return binary.NativeEndian.Uint64(v.Value[:])
	}
}
