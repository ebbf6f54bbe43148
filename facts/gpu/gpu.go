// Package gpu collects GPU facts: the live state of every GPU through NVML
// (collector "gpu"), and the NVIDIA stack as installed in an image or on a
// host (collector "gpu_driver"). It also carries the driver/CUDA/architecture
// compatibility matrix that both collectors write into the facts.
package gpu

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// DefaultCallTimeout bounds one NVML call.
const DefaultCallTimeout = 5 * time.Second

// procVersion is where the loaded kernel module states its version.
const procVersion = "/proc/driver/nvidia/version"

// Option tunes the NVML collector.
type Option func(*NVML)

// WithCallTimeout sets the deadline of each NVML call (default 5s).
func WithCallTimeout(d time.Duration) Option {
	return func(c *NVML) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithClock replaces time.Now, which decides the XID window.
func WithClock(now func() time.Time) Option { return func(c *NVML) { c.now = now } }

// WithXIDWindow sets how far back XID events are kept when their time can be
// read (default 7 days).
func WithXIDWindow(d time.Duration) Option { return func(c *NVML) { c.window = d } }

// NVML reads the GPUs of a live host through an NVML library: the real
// one (nvml.New()) or a go-nvml mock in tests.
type NVML struct {
	lib     nvml.Interface
	timeout time.Duration
	now     func() time.Time
	window  time.Duration
	journal JournalReader
}

// NewNVML returns the reader of the GPUs over lib.
func NewNVML(lib nvml.Interface, opts ...Option) *NVML {
	c := &NVML{lib: lib, timeout: DefaultCallTimeout, now: time.Now, window: 7 * 24 * time.Hour, journal: runJournalctl}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Collect reads the GPUs. A host without a usable driver is not an error:
// it returns the facts with available=false and NVML's reason, and the
// collector is unavailable, so the device checks skip and say why. A driver/library
// mismatch is different: it is itself a finding, so the collector succeeds
// with available=false and driver_mismatch=true, and the mismatch check fails.
func (c *NVML) Collect(ctx context.Context, env *collect.Env) (*facts.GPU, error) {
	if !env.Live {
		return nil, collect.NotApplicable("NVML needs a running host; an image has no GPU to ask")
	}
	g := &facts.GPU{Devices: []facts.GPUDevice{}, XIDEvents: []facts.XIDEvent{}}

	// The kernel log and the kernel module version do not need NVML, and
	// matter most when NVML cannot start.
	c.readKernelModule(env, g)
	c.readXIDs(ctx, env, g)

	call := &caller{timeout: c.timeout}
	ret, err := call.do(ctx, "Init", c.lib.Init)
	if err != nil {
		g.Reason = err.Error()
		return g, collect.Unavailable(g.Reason)
	}
	if ret != nvml.SUCCESS {
		g.Reason = "NVML init failed: " + describe(c.lib, ret)
		if ret == nvml.ERROR_LIB_RM_VERSION_MISMATCH {
			g.DriverMismatch = true
			return g, nil
		}
		return g, collect.Unavailable(g.Reason)
	}
	defer func() {
		// Shutdown after a hung call would queue behind it; leave it.
		if !call.wedged {
			_, _ = call.do(context.WithoutCancel(ctx), "Shutdown", c.lib.Shutdown)
		}
	}()

	problems := c.readSystem(ctx, call, g)
	if err := c.readDevices(ctx, call, g); err != nil {
		return g, err
	}
	attributeXIDs(g)
	g.Available = true
	if len(problems) > 0 {
		g.Reason = "some NVML queries failed: " + strings.Join(problems, "; ")
	}
	return g, nil
}

// readSystem reads what NVML says of the host as a whole: driver, CUDA and
// NVML versions and the confidential compute state. A query that fails is
// returned as a problem rather than stopping the collector, since the
// devices can still be read without it.
func (c *NVML) readSystem(ctx context.Context, call *caller, g *facts.GPU) []string {
	var problems []string
	note := func(what string, ret nvml.Return, err error) {
		if err != nil {
			problems = append(problems, what+": "+err.Error())
		} else {
			problems = append(problems, what+": "+describe(c.lib, ret))
		}
	}

	var s string
	if ret, err := call.do(ctx, "SystemGetDriverVersion", func() (r nvml.Return) { s, r = c.lib.SystemGetDriverVersion(); return }); err != nil || ret != nvml.SUCCESS {
		note("driver version", ret, err)
	} else {
		g.DriverVersion = s
		g.DriverBranch, _ = Branch(s)
	}
	var cuda int
	if ret, err := call.do(ctx, "SystemGetCudaDriverVersion", func() (r nvml.Return) { cuda, r = c.lib.SystemGetCudaDriverVersion(); return }); err != nil || ret != nvml.SUCCESS {
		note("CUDA driver version", ret, err)
	} else {
		// NVML encodes 12.2 as 12020.
		g.CUDADriverVersion = fmt.Sprintf("%d.%d", cuda/1000, cuda%1000/10)
	}
	if ret, err := call.do(ctx, "SystemGetNVMLVersion", func() (r nvml.Return) { s, r = c.lib.SystemGetNVMLVersion(); return }); err != nil || ret != nvml.SUCCESS {
		note("NVML version", ret, err)
	} else {
		g.NVMLVersion = s
	}
	var cc nvml.ConfComputeSystemState
	switch ret, err := call.do(ctx, "SystemGetConfComputeState", func() (r nvml.Return) { cc, r = c.lib.SystemGetConfComputeState(); return }); {
	case err != nil:
		note("confidential compute", ret, err)
	case ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_FUNCTION_NOT_FOUND:
		g.Unsupported = append(g.Unsupported, "conf_compute")
	case ret != nvml.SUCCESS:
		note("confidential compute", ret, nil)
	default:
		g.ConfCompute = confCompute(cc)
	}
	return problems
}

// readDevices reads every GPU. Unlike a system query, a device count NVML
// cannot give (or gives absurdly) makes the collector unavailable: without
// it no device check has anything to judge.
func (c *NVML) readDevices(ctx context.Context, call *caller, g *facts.GPU) error {
	var count int
	ret, err := call.do(ctx, "DeviceGetCount", func() (r nvml.Return) { count, r = c.lib.DeviceGetCount(); return })
	if err != nil || ret != nvml.SUCCESS {
		if err != nil {
			g.Reason = err.Error()
		} else {
			g.Reason = "NVML DeviceGetCount failed: " + describe(c.lib, ret)
		}
		return collect.Unavailable(g.Reason)
	}
	// A count beyond any real machine is a broken answer, not 10^6 GPUs.
	const maxDevices = 256
	if count < 0 || count > maxDevices {
		g.Reason = fmt.Sprintf("NVML reports %d GPUs; refusing a count outside 0..%d", count, maxDevices)
		return collect.Unavailable(g.Reason)
	}
	for i := range count {
		g.Devices = append(g.Devices, c.device(ctx, call, i))
	}
	return nil
}

// device reads one GPU. Each field is read on its own: NOT_SUPPORTED leaves
// the field nil and names it in Unsupported; any other failure leaves it nil
// and names it in Errors, which a check turns into a failure.
func (c *NVML) device(ctx context.Context, call *caller, i int) facts.GPUDevice {
	d := facts.GPUDevice{Index: i, NVLink: []facts.NVLink{}}
	var dev nvml.Device
	if ret, err := call.do(ctx, "DeviceGetHandleByIndex", func() (r nvml.Return) { dev, r = c.lib.DeviceGetHandleByIndex(i); return }); err != nil || ret != nvml.SUCCESS {
		d.Errors = append(d.Errors, "handle: "+c.why(ret, err))
		return d
	}
	// get runs one call for field key. It returns true when the call
	// succeeded; otherwise it has recorded why.
	var get getter = func(key, name string, fn func() nvml.Return) bool {
		ret, err := call.do(ctx, name, fn)
		switch {
		case err != nil:
			d.Errors = append(d.Errors, key+": "+err.Error())
		case ret == nvml.SUCCESS:
			return true
		case ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_FUNCTION_NOT_FOUND:
			if !slices.Contains(d.Unsupported, key) {
				d.Unsupported = append(d.Unsupported, key)
			}
		default:
			d.Errors = append(d.Errors, fmt.Sprintf("%s: %s: %s", key, name, describe(c.lib, ret)))
		}
		return false
	}

	// Calls write only locals: a call abandoned on timeout may still write
	// them later, and d is returned by value.
	identify(dev, &d, get)
	memoryHealth(dev, &d, get)
	deviceState(dev, &d, get)
	firmware(dev, &d, get)
	c.nvlinks(ctx, call, dev, &d)
	c.throttle(ctx, call, dev, &d, get)
	return d
}

// getter runs one NVML call for a field of a device's facts: true when it
// succeeded, and otherwise it has recorded why (unsupported, or an error).
type getter func(key, name string, fn func() nvml.Return) bool

// identify reads what the device is: its UUID, name, PCI address and
// architecture.
func identify(dev nvml.Device, d *facts.GPUDevice, get getter) {
	var s string
	if get("uuid", "GetUUID", func() (r nvml.Return) { s, r = dev.GetUUID(); return }) {
		d.UUID = s
	}
	if get("name", "GetName", func() (r nvml.Return) { s, r = dev.GetName(); return }) {
		d.Name = s
	}
	var pci nvml.PciInfo
	if get("pci_bus_id", "GetPciInfo", func() (r nvml.Return) { pci, r = dev.GetPciInfo(); return }) {
		d.PCIBusID = BusID(pci.BusId)
	}

	arch, known := ArchOf(d.Name)
	if !known {
		var a nvml.DeviceArchitecture
		if get("architecture", "GetArchitecture", func() (r nvml.Return) { a, r = dev.GetArchitecture(); return }) {
			arch, known = ArchByName(archName(a))
		}
	}
	if known {
		d.Architecture, d.MinDriverBranch, d.OpenModuleRequired = arch.Name, arch.MinBranch, arch.OpenRequired
		d.OpenModuleSupported = &arch.OpenSupported
	}
}

// memoryHealth reads the device memory's health: ECC mode and uncorrected
// errors, retired pages and remapped rows.
func memoryHealth(dev nvml.Device, d *facts.GPUDevice, get getter) {
	var cur, pend nvml.EnableState
	if get("ecc", "GetEccMode", func() (r nvml.Return) { cur, pend, r = dev.GetEccMode(); return }) {
		e := &facts.ECC{Current: cur == nvml.FEATURE_ENABLED, Pending: pend == nvml.FEATURE_ENABLED}
		var n uint64
		if get("ecc_uncorrected_volatile", "GetTotalEccErrors", func() (r nvml.Return) {
			n, r = dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
			return
		}) {
			e.UncorrectedVolatile = clampInt64(n)
		}
		if get("ecc_uncorrected_aggregate", "GetTotalEccErrors", func() (r nvml.Return) {
			n, r = dev.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC)
			return
		}) {
			e.UncorrectedAggregate = clampInt64(n)
		}
		d.ECC = e
	}

	var sbe, dbe []uint64
	var pendingRetire nvml.EnableState
	if get("retired_pages", "GetRetiredPages", func() (r nvml.Return) {
		sbe, r = dev.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
		return
	}) && get("retired_pages", "GetRetiredPages", func() (r nvml.Return) {
		dbe, r = dev.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
		return
	}) && get("retired_pages", "GetRetiredPagesPendingStatus", func() (r nvml.Return) {
		pendingRetire, r = dev.GetRetiredPagesPendingStatus()
		return
	}) {
		d.RetiredPages = &facts.RetiredPages{Count: len(sbe) + len(dbe), Pending: pendingRetire == nvml.FEATURE_ENABLED}
	}

	var corr, unc int
	var rowsPending, rowsFailed bool
	if get("remapped_rows", "GetRemappedRows", func() (r nvml.Return) { corr, unc, rowsPending, rowsFailed, r = dev.GetRemappedRows(); return }) {
		d.RemappedRows = &facts.RemappedRows{Correctable: corr, Uncorrectable: unc, Pending: rowsPending, Failed: rowsFailed}
	}
}

// deviceState reads how the device runs: persistence and MIG modes,
// temperature against its slowdown threshold, power, and its PCIe link.
func deviceState(dev nvml.Device, d *facts.GPUDevice, get getter) {
	var pm nvml.EnableState
	if get("persistence_mode", "GetPersistenceMode", func() (r nvml.Return) { pm, r = dev.GetPersistenceMode(); return }) {
		on := pm == nvml.FEATURE_ENABLED
		d.PersistenceMode = &on
	}

	var migCur, migPend int
	if get("mig", "GetMigMode", func() (r nvml.Return) { migCur, migPend, r = dev.GetMigMode(); return }) {
		d.MIG = &facts.MIG{Current: migCur == nvml.DEVICE_MIG_ENABLE, Pending: migPend == nvml.DEVICE_MIG_ENABLE}
	}

	var u uint32
	if get("temperature", "GetTemperature", func() (r nvml.Return) { u, r = dev.GetTemperature(nvml.TEMPERATURE_GPU); return }) {
		t := int(u)
		d.TemperatureC = &t
	}
	if get("temperature_slowdown", "GetTemperatureThreshold", func() (r nvml.Return) {
		u, r = dev.GetTemperatureThreshold(nvml.TEMPERATURE_THRESHOLD_SLOWDOWN)
		return
	}) {
		t := int(u)
		d.TemperatureSlowdownC = &t
	}
	if get("power", "GetPowerUsage", func() (r nvml.Return) { u, r = dev.GetPowerUsage(); return }) {
		w := float64(u) / 1000
		d.PowerW = &w
	}
	if get("power_limit", "GetEnforcedPowerLimit", func() (r nvml.Return) { u, r = dev.GetEnforcedPowerLimit(); return }) {
		w := float64(u) / 1000
		d.PowerLimitW = &w
	}

	var p facts.PCIe
	if get("pcie", "GetCurrPcieLinkGeneration", func() (r nvml.Return) { p.GenCurrent, r = dev.GetCurrPcieLinkGeneration(); return }) &&
		get("pcie", "GetMaxPcieLinkGeneration", func() (r nvml.Return) { p.GenMax, r = dev.GetMaxPcieLinkGeneration(); return }) &&
		get("pcie", "GetCurrPcieLinkWidth", func() (r nvml.Return) { p.WidthCurrent, r = dev.GetCurrPcieLinkWidth(); return }) &&
		get("pcie", "GetMaxPcieLinkWidth", func() (r nvml.Return) { p.WidthMax, r = dev.GetMaxPcieLinkWidth(); return }) {
		d.PCIe = &p
	}
}

// nvlinks reads link states until the GPU says it has no more links.
func (c *NVML) nvlinks(ctx context.Context, call *caller, dev nvml.Device, d *facts.GPUDevice) {
	for link := range nvml.NVLINK_MAX_LINKS {
		var st nvml.EnableState
		ret, err := call.do(ctx, "GetNvLinkState", func() (r nvml.Return) { st, r = dev.GetNvLinkState(link); return })
		switch {
		case err != nil:
			d.Errors = append(d.Errors, fmt.Sprintf("nvlink: link %d: %s", link, err))
			return
		case ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT || ret == nvml.ERROR_FUNCTION_NOT_FOUND:
			if link == 0 {
				d.Unsupported = append(d.Unsupported, "nvlink")
			}
			return
		case ret != nvml.SUCCESS:
			d.Errors = append(d.Errors, fmt.Sprintf("nvlink: link %d: GetNvLinkState: %s", link, describe(c.lib, ret)))
			return
		}
		d.NVLink = append(d.NVLink, facts.NVLink{Link: link, Active: st == nvml.FEATURE_ENABLED})
	}
}

// firmware reads what the board's firmware says of itself: its VBIOS
// version and whether its InfoROM passes validation.
func firmware(dev nvml.Device, d *facts.GPUDevice, get getter) {
	var v string
	if get("vbios_version", "GetVbiosVersion", func() (r nvml.Return) { v, r = dev.GetVbiosVersion(); return }) {
		d.VBIOSVersion = v
	}
	// A corrupt InfoROM is ValidateInforom's answer, not a failed call.
	valid := true
	if get("inforom_valid", "ValidateInforom", func() nvml.Return {
		r := dev.ValidateInforom()
		if r == nvml.ERROR_CORRUPTED_INFOROM {
			valid = false
			return nvml.SUCCESS
		}
		return r
	}) {
		d.InfoROMValid = &valid
	}
}

// throttleNames are NVML's clock event reasons, by bit.
var throttleNames = []struct {
	bit  uint64
	name string
}{
	{nvml.ClocksEventReasonGpuIdle, "gpu_idle"},
	{nvml.ClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
	{nvml.ClocksEventReasonSwPowerCap, "sw_power_cap"},
	{nvml.ClocksThrottleReasonHwSlowdown, "hw_slowdown"},
	{nvml.ClocksEventReasonSyncBoost, "sync_boost"},
	{nvml.ClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
	{nvml.ClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"},
	{nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
	{nvml.ClocksEventReasonDisplayClockSetting, "display_clock_setting"},
}

// ThrottleReasons names the bits of an NVML clock event reason mask; bits
// it does not know are named in hex so they are not lost.
func ThrottleReasons(mask uint64) []string {
	out := []string{}
	for _, t := range throttleNames {
		if mask&t.bit != 0 {
			out = append(out, t.name)
			mask &^= t.bit
		}
	}
	if mask != 0 {
		out = append(out, fmt.Sprintf("0x%x", mask))
	}
	return out
}

// throttle prefers GetCurrentClocksEventReasons and falls back to the older
// GetCurrentClocksThrottleReasons on drivers that lack it.
func (c *NVML) throttle(ctx context.Context, call *caller, dev nvml.Device, d *facts.GPUDevice, get getter) {
	var mask uint64
	ret, err := call.do(ctx, "GetCurrentClocksEventReasons", func() (r nvml.Return) { mask, r = dev.GetCurrentClocksEventReasons(); return })
	if err == nil && ret == nvml.SUCCESS {
		d.ThrottleReasons = ThrottleReasons(mask)
		return
	}
	if err == nil && ret == nvml.ERROR_FUNCTION_NOT_FOUND {
		if get("throttle_reasons", "GetCurrentClocksThrottleReasons", func() (r nvml.Return) { mask, r = dev.GetCurrentClocksThrottleReasons(); return }) {
			d.ThrottleReasons = ThrottleReasons(mask)
		}
		return
	}
	switch {
	case err != nil:
		d.Errors = append(d.Errors, "throttle_reasons: "+err.Error())
	case ret == nvml.ERROR_NOT_SUPPORTED:
		d.Unsupported = append(d.Unsupported, "throttle_reasons")
	default:
		d.Errors = append(d.Errors, "throttle_reasons: GetCurrentClocksEventReasons: "+describe(c.lib, ret))
	}
}

func (c *NVML) why(ret nvml.Return, err error) string {
	if err != nil {
		return err.Error()
	}
	return describe(c.lib, ret)
}

func confCompute(s nvml.ConfComputeSystemState) *facts.ConfCompute {
	onOff := func(v uint32, on uint32) string {
		if v == on {
			return "on"
		}
		if v == 0 {
			return "off"
		}
		return fmt.Sprintf("unknown(%d)", v)
	}
	env := fmt.Sprintf("unknown(%d)", s.Environment)
	switch s.Environment {
	case nvml.CC_SYSTEM_ENVIRONMENT_UNAVAILABLE:
		env = "unavailable"
	case nvml.CC_SYSTEM_ENVIRONMENT_SIM:
		env = "sim"
	case nvml.CC_SYSTEM_ENVIRONMENT_PROD:
		env = "prod"
	}
	return &facts.ConfCompute{
		Feature:      onOff(s.CcFeature, nvml.CC_SYSTEM_FEATURE_ENABLED),
		DevtoolsMode: onOff(s.DevToolsMode, nvml.CC_SYSTEM_DEVTOOLS_MODE_ON),
		Environment:  env,
	}
}

// BusID turns NVML's NUL-terminated PCI bus id into a string.
func BusID(raw [32]int8) string {
	b := make([]byte, 0, len(raw))
	for _, c := range raw {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(bytes.ToValidUTF8(b, nil))
}

func archName(a nvml.DeviceArchitecture) string {
	switch a {
	case nvml.DEVICE_ARCH_KEPLER:
		return "kepler"
	case nvml.DEVICE_ARCH_MAXWELL:
		return "maxwell"
	case nvml.DEVICE_ARCH_PASCAL:
		return "pascal"
	case nvml.DEVICE_ARCH_VOLTA:
		return "volta"
	case nvml.DEVICE_ARCH_TURING:
		return "turing"
	case nvml.DEVICE_ARCH_AMPERE:
		return "ampere"
	case nvml.DEVICE_ARCH_ADA:
		return "ada"
	case nvml.DEVICE_ARCH_HOPPER:
		return "hopper"
	case nvml.DEVICE_ARCH_BLACKWELL:
		return "blackwell"
	}
	return ""
}

func clampInt64(n uint64) int64 {
	if n > 1<<62 {
		return 1 << 62
	}
	return int64(n)
}
