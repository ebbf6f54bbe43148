// Package gpumock is the stand-in for the GPUs of a node without any: go-nvml's
// mock DGX A100 (eight A100s), answering every reading the agent samples with
// steady values. The deploy tests give it to the agent they run in-process,
// and an agent built with the nvmlmock tag asks it in place of NVML, for a
// pod on a test node whose runtime has no NVIDIA library to put in.
package gpumock

import (
	"encoding/binary"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// Count is how many GPUs DGXA100 has.
const Count = 8

// UUID is the UUID of the GPU at index i. The mock draws random ones; fixed
// ones let a test in another process (a device plugin advertising them, the
// kubelet allocating one) name the same GPUs as the agent.
func UUID(i int) string {
	return fmt.Sprintf("GPU-6770756d-6f63-4b00-8000-%012d", i)
}

// DGXA100 is go-nvml's mock DGX A100 with fixed UUIDs, steady at 40 C,
// 100 W and 30% utilization, with no Xid events and no processes.
func DGXA100() nvml.Interface {
	g := dgxa100.New()
	g.ErrorStringFunc = func(r nvml.Return) string { return r.Error() }
	g.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(uint32) (nvml.EventData, nvml.Return) { return nvml.EventData{}, nvml.ERROR_TIMEOUT },
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	for i, d := range g.Devices {
		dev := d.(*server.Device)
		dev.UUID = UUID(i)
		steady(dev)
	}
	return g
}

// steady answers the readings the agent samples that the mock leaves
// unanswered.
func steady(dev *server.Device) {
	dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 30, Memory: 10}, nvml.SUCCESS }
	dev.GetEncoderUtilizationFunc = func() (uint32, uint32, nvml.Return) { return 0, 167000, nvml.SUCCESS }
	dev.GetDecoderUtilizationFunc = func() (uint32, uint32, nvml.Return) { return 0, 167000, nvml.SUCCESS }
	dev.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
		return nvml.Memory_v2{Total: 40 << 30, Reserved: 512 << 20, Used: 1 << 30, Free: 40<<30 - 512<<20 - 1<<30}, nvml.SUCCESS
	}
	dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 100000, nvml.SUCCESS }
	dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return 9e8, nvml.SUCCESS }
	dev.GetPcieReplayCounterFunc = func() (int, nvml.Return) { return 0, nvml.SUCCESS }
	dev.GetFieldValuesFunc = func(fv []nvml.FieldValue) nvml.Return {
		for k := range fv {
			fv[k].NvmlReturn = uint32(nvml.SUCCESS)
			fv[k].ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
			binary.NativeEndian.PutUint64(fv[k].Value[:], 0)
		}
		return nvml.SUCCESS
	}
	dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 40, nvml.SUCCESS }
	dev.GetTemperatureThresholdFunc = func(nvml.TemperatureThresholds) (uint32, nvml.Return) { return 88, nvml.SUCCESS }
	dev.GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1410, nvml.SUCCESS }
	dev.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.SUCCESS }
	dev.GetVbiosVersionFunc = func() (string, nvml.Return) { return "92.00.45.00.03", nvml.SUCCESS }
	dev.ValidateInforomFunc = func() nvml.Return { return nvml.SUCCESS }
	dev.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { return 0, nvml.SUCCESS }
	dev.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.SUCCESS }
	dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
	dev.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
}
