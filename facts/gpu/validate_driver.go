package gpu

import (
	"context"
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// sysModuleVersion is where sysfs states the loaded module's version when
// /proc/driver/nvidia is not there to read (a container given the host's
// /sys but not its /proc).
const sysModuleVersion = "/sys/module/nvidia/version"

// moduleVersion reads the loaded kernel module's version: from
// /proc/driver/nvidia/version, else /sys/module/nvidia/version. An empty
// version means neither names one: the module is not loaded, or its files
// are not visible under the host root.
func moduleVersion(fsys sysroot.FS) (version, kind, source string) {
	if data, err := fsys.ReadFileLimit(procVersion, 64<<10); err == nil {
		if version, kind = ParseKernelModuleVersion(string(data)); version != "" {
			return version, kind, procVersion
		}
	}
	if data, err := fsys.ReadFileLimit(sysModuleVersion, sysfsAttrMax); err == nil {
		if v := strings.TrimSpace(string(data)); isDriverVersion(v) {
			return v, "", sysModuleVersion
		}
	}
	return "", "", ""
}

// driver is step 1: the kernel module is loaded, NVML starts, and
// libnvidia-ml's driver version is the module's. It also lists the GPUs
// every later step is held to.
func (s *session) driver(ctx context.Context) facts.ValidationStep {
	step := facts.ValidationStep{Name: StepDriver, Required: true}
	module, kind, source := moduleVersion(s.env.FS)
	lib := s.v.lib
	ret, err := s.call.do(ctx, "Init", lib.Init)
	switch {
	case err != nil:
		return notRun(step, "NVML did not answer: "+err.Error())
	case ret == nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		return failed(step, fmt.Sprintf("libnvidia-ml and the loaded kernel module %s differ, so NVML refuses to start: %s", orUnknown(module), describe(lib, ret)))
	case ret != nvml.SUCCESS && module == "":
		return failed(step, fmt.Sprintf("the NVIDIA kernel module is not loaded (neither %s nor %s names a version) and NVML cannot start: %s",
			s.env.FS.Display(procVersion), s.env.FS.Display(sysModuleVersion), describe(lib, ret)))
	case ret != nvml.SUCCESS:
		return failed(step, fmt.Sprintf("kernel module %s is loaded, but NVML cannot start: %s", module, describe(lib, ret)))
	}
	s.started = true

	var libVersion string
	ret, err = s.call.do(ctx, "SystemGetDriverVersion", func() (r nvml.Return) { libVersion, r = lib.SystemGetDriverVersion(); return })
	switch {
	case err != nil || ret != nvml.SUCCESS:
		return notRun(step, "libnvidia-ml does not say its driver version: "+s.why(ret, err))
	case module == "":
		return notRun(step, fmt.Sprintf("libnvidia-ml reports driver %s, but neither %s nor %s names the loaded module's version to compare it with",
			libVersion, s.env.FS.Display(procVersion), s.env.FS.Display(sysModuleVersion)))
	case libVersion != module:
		return failed(step, fmt.Sprintf("libnvidia-ml reports driver %s, but the loaded kernel module is %s (%s): reboot, or reinstall one to match the other",
			libVersion, module, s.env.FS.Display(source)))
	}
	if reason, ok := s.listGPUs(ctx, &step); !ok {
		return failed(step, reason)
	}
	if kind != "" {
		kind = " (" + kind + ")"
	}
	return passed(step, fmt.Sprintf("kernel module %s%s and libnvidia-ml %s agree; NVML lists %d GPUs", module, kind, libVersion, len(s.gpus)))
}

// listGPUs reads every GPU NVML lists into s.gpus and the step's per-GPU
// results. ok is false, with the reason, when NVML lists none or cannot read
// one: a GPU NVML cannot read is a GPU no workload can use.
func (s *session) listGPUs(ctx context.Context, step *facts.ValidationStep) (reason string, ok bool) {
	lib := s.v.lib
	var count int
	ret, err := s.call.do(ctx, "DeviceGetCount", func() (r nvml.Return) { count, r = lib.DeviceGetCount(); return })
	switch {
	case err != nil || ret != nvml.SUCCESS:
		return "NVML cannot count the GPUs: " + s.why(ret, err), false
	case count == 0:
		return "NVML lists no GPUs", false
	case count < 0 || count > maxValidatedGPUs:
		return fmt.Sprintf("NVML reports %d GPUs; refusing a count outside 1..%d", count, maxValidatedGPUs), false
	}
	bad := 0
	for i := range count {
		g, problem := s.readGPU(ctx, i)
		if problem != "" {
			bad++
			step.GPUs = append(step.GPUs, g.result(facts.ValidationFailed, problem))
			continue
		}
		s.gpus = append(s.gpus, g)
		step.GPUs = append(step.GPUs, g.result(facts.ValidationPassed, g.name))
	}
	if bad > 0 {
		return fmt.Sprintf("NVML cannot read %d of its %d GPUs", bad, count), false
	}
	return "", true
}

// maxValidatedGPUs bounds the GPUs one node may list: more is a broken answer.
const maxValidatedGPUs = 256

// readGPU reads one GPU's handle, UUID, name and device minor number.
func (s *session) readGPU(ctx context.Context, i int) (gpuInfo, string) {
	g := gpuInfo{index: i, minor: -1}
	lib := s.v.lib
	// The calls write only their own locals: one abandoned on timeout may
	// still write them later.
	var dev nvml.Device
	ret, err := s.call.do(ctx, "DeviceGetHandleByIndex", func() (r nvml.Return) { dev, r = lib.DeviceGetHandleByIndex(i); return })
	if err != nil || ret != nvml.SUCCESS {
		return g, "NVML cannot open this GPU: " + s.why(ret, err)
	}
	g.dev = dev
	var uuid, name string
	if ret, err := s.call.do(ctx, "GetUUID", func() (r nvml.Return) { uuid, r = dev.GetUUID(); return }); err != nil || ret != nvml.SUCCESS {
		return g, "NVML cannot read its UUID: " + s.why(ret, err)
	}
	g.uuid = uuid
	if ret, err := s.call.do(ctx, "GetName", func() (r nvml.Return) { name, r = dev.GetName(); return }); err != nil || ret != nvml.SUCCESS {
		return g, "NVML cannot read its name: " + s.why(ret, err)
	}
	g.name = name
	var minor int
	if ret, err := s.call.do(ctx, "GetMinorNumber", func() (r nvml.Return) { minor, r = dev.GetMinorNumber(); return }); err == nil && ret == nvml.SUCCESS {
		g.minor = minor
	}
	return g, ""
}

// migMode is step 5: every GPU's MIG mode is the one wanted, with no other
// mode pending a reset. A GPU without MIG counts as disabled.
func (s *session) migMode(ctx context.Context) facts.ValidationStep {
	step := facts.ValidationStep{Name: StepMIG, Required: true}
	want := s.v.mig
	for _, g := range s.gpus {
		cur, pend, problem := s.readMIG(ctx, g)
		if problem != "" {
			step.GPUs = append(step.GPUs, g.result(facts.ValidationNotRun, problem))
			continue
		}
		detail := "MIG " + cur
		if pend != cur {
			detail += ", " + pend + " pending a GPU reset"
		}
		switch {
		case want == MIGAny:
			step.GPUs = append(step.GPUs, g.result(facts.ValidationPassed, detail))
		case cur == "unsupported" && want == MIGEnabled:
			step.GPUs = append(step.GPUs, g.result(facts.ValidationFailed, "this GPU has no MIG mode; MIG enabled is wanted"))
		case cur != "unsupported" && cur != want:
			step.GPUs = append(step.GPUs, g.result(facts.ValidationFailed, fmt.Sprintf("%s; MIG %s is wanted", detail, want)))
		case pend != cur:
			step.GPUs = append(step.GPUs, g.result(facts.ValidationFailed, detail))
		default:
			step.GPUs = append(step.GPUs, g.result(facts.ValidationPassed, detail))
		}
	}
	step = judge(step, "the MIG mode check (MIG "+want+" wanted)")
	if want == MIGAny && step.Status == facts.ValidationPassed {
		step.Reason = fmt.Sprintf("any MIG mode is accepted (params.gpu_mig is not set); read on every GPU (%d)", len(s.gpus))
	}
	return step
}

// readMIG returns a GPU's current and pending MIG modes as "enabled",
// "disabled" or "unsupported", or why they could not be read.
func (s *session) readMIG(ctx context.Context, g gpuInfo) (cur, pend, problem string) {
	var c, p int
	ret, err := s.call.do(ctx, "GetMigMode", func() (r nvml.Return) { c, p, r = g.dev.GetMigMode(); return })
	switch {
	case err != nil:
		return "", "", "NVML did not say its MIG mode: " + err.Error()
	case ret == nvml.ERROR_NOT_SUPPORTED:
		return "unsupported", "unsupported", ""
	case ret != nvml.SUCCESS:
		return "", "", "NVML did not say its MIG mode: " + describe(s.v.lib, ret)
	}
	mode := func(m int) string {
		if m == nvml.DEVICE_MIG_ENABLE {
			return MIGEnabled
		}
		return MIGDisabled
	}
	return mode(c), mode(p), ""
}

func (s *session) why(ret nvml.Return, err error) string {
	if err != nil {
		return err.Error()
	}
	return describe(s.v.lib, ret)
}

func orUnknown(v string) string {
	if v == "" {
		return "(version unknown)"
	}
	return v
}
