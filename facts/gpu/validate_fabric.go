package gpu

import (
	"context"
	"fmt"
	"path"
	"strings"
	"unicode"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/osinfo"
)

// fabricManagerUnit is the service that trains the NVSwitch fabric and
// registers each GPU with it.
const fabricManagerUnit = "nvidia-fabricmanager.service"

// nvswitchClass is the PCI class sysfs gives an NVSwitch: a bridge of
// subclass "other" (0x0680), from NVIDIA.
const nvswitchClass = "0x0680"

// hgxBoard is an 8-GPU HGX baseboard: its GPUs meet through NVSwitch chips,
// so the fabric manager must run, and switches is how many the host's PCI
// bus shows (0: not counted).
type hgxBoard struct {
	product  string
	gpus     int
	switches int
}

// hgxBoardOf says which HGX baseboard a GPU of this NVML name sits on, if
// any. Only SXM parts do: PCIe cards and NVL parts meet through bridges.
// Switch counts are those of NVIDIA's DGX systems built on each board: six
// second-generation NVSwitches on A100, four third-generation on H100 and
// H200. NVLink 5 boards (B200) are managed through their own switch
// interfaces rather than as PCI functions the host's driver owns, so their
// switches are not counted; the fabric manager and each GPU's fabric state
// still are.
func hgxBoardOf(name string) (hgxBoard, bool) {
	tokens := map[string]bool{}
	for _, t := range strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		tokens[t] = true
	}
	bridged := tokens["PCIE"] || tokens["NVL"]
	switch {
	case tokens["A100"] && tokens["SXM4"]:
		return hgxBoard{product: "HGX A100", gpus: 8, switches: 6}, true
	case tokens["H100"] && !bridged:
		return hgxBoard{product: "HGX H100", gpus: 8, switches: 4}, true
	case tokens["H200"] && !bridged:
		return hgxBoard{product: "HGX H200", gpus: 8, switches: 4}, true
	case tokens["B200"] && !bridged:
		return hgxBoard{product: "HGX B200", gpus: 8}, true
	}
	return hgxBoard{}, false
}

// countNVSwitches counts the NVSwitches on the host's PCI bus.
func countNVSwitches(env *collect.Env) (int, error) {
	entries, err := env.FS.ReadDir(pciDevices)
	if err != nil {
		return 0, fmt.Errorf("listing %s: %w", env.FS.Display(pciDevices), err)
	}
	if len(entries) > maxPCIFunctions {
		return 0, fmt.Errorf("%s has %d entries, over the limit of %d", env.FS.Display(pciDevices), len(entries), maxPCIFunctions)
	}
	n := 0
	for _, e := range entries {
		d, ok, err := readPCIFunction(env.FS, path.Join(pciDevices, e.Name()))
		if err != nil {
			return 0, err
		}
		if ok && strings.HasPrefix(d.Class, nvswitchClass) {
			n++
		}
	}
	return n, nil
}

// fabric is step 4, on NVSwitch systems: the fabric manager runs, the
// NVSwitches the board carries are on the PCI bus, and NVML says each GPU's
// registration with the fabric completed without error. A node whose GPUs
// are no HGX product and whose bus shows no NVSwitch has no fabric: the step
// is not run, and not required.
func (s *session) fabric(ctx context.Context) facts.ValidationStep {
	step := facts.ValidationStep{Name: StepFabric, Required: true}
	board, onBoard := hgxBoardOf(s.gpus[0].name)
	onBoard = onBoard && len(s.gpus) == board.gpus
	switches, pciErr := countNVSwitches(s.env)
	if !onBoard && (pciErr != nil || switches == 0) {
		step.Required = false
		seen := "the PCI bus shows no NVSwitch"
		if pciErr != nil {
			seen = "the PCI bus cannot be read (" + pciErr.Error() + ")"
		}
		return notRun(step, fmt.Sprintf("not an NVSwitch system: %d × %s is no 8-GPU HGX board, and %s", len(s.gpus), s.gpus[0].name, seen))
	}
	var problems, unknown []string
	state, why := osinfo.UnitActiveState(ctx, s.env, fabricManagerUnit)
	switch state {
	case "active":
	case "unknown":
		unknown = append(unknown, fmt.Sprintf("whether %s runs is unknown: %s", fabricManagerUnit, why))
	default:
		problems = append(problems, fmt.Sprintf("%s is %s, not active", fabricManagerUnit, state))
	}
	switch {
	case pciErr != nil:
		unknown = append(unknown, "the NVSwitches cannot be counted: "+pciErr.Error())
	case onBoard && board.switches > 0 && switches != board.switches:
		problems = append(problems, fmt.Sprintf("the PCI bus shows %d NVSwitches; an 8-GPU %s board has %d", switches, board.product, board.switches))
	}
	for _, g := range s.gpus {
		step.GPUs = append(step.GPUs, s.fabricState(ctx, g))
	}
	step = judge(step, "fabric registration")
	switch {
	case len(problems) > 0:
		step.Status = facts.ValidationFailed
		step.Reason = strings.Join(problems, "; ") + "; " + step.Reason
	case len(unknown) > 0 && step.Status == facts.ValidationPassed:
		step.Status = facts.ValidationNotRun
		step.Reason = strings.Join(unknown, "; ") + "; " + step.Reason
	}
	return step
}

// fabricState reads one GPU's registration with the fabric. GPUs before
// Hopper do not report one; theirs is judged by the fabric manager and the
// switches alone, and they pass here with that said.
func (s *session) fabricState(ctx context.Context, g gpuInfo) facts.ValidationGPUResult {
	var info nvml.GpuFabricInfo
	ret, err := s.call.do(ctx, "GetGpuFabricInfo", func() (r nvml.Return) { info, r = g.dev.GetGpuFabricInfo(); return })
	preHopper := false
	if a, ok := ArchOf(g.name); ok {
		preHopper = a.Name == "ampere" || a.Name == "volta"
	}
	switch {
	case err != nil:
		return g.result(facts.ValidationNotRun, "NVML did not say its fabric state: "+err.Error())
	case (ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_FUNCTION_NOT_FOUND) && preHopper:
		return g.result(facts.ValidationPassed, "reports no fabric state (before Hopper); judged by the fabric manager and the NVSwitches")
	case ret != nvml.SUCCESS:
		return g.result(facts.ValidationNotRun, "NVML did not say its fabric state: "+describe(s.v.lib, ret))
	}
	switch info.State {
	case nvml.GPU_FABRIC_STATE_COMPLETED:
		if st := nvml.Return(info.Status); st != nvml.SUCCESS {
			return g.result(facts.ValidationFailed, "fabric registration completed with an error: "+describe(s.v.lib, st))
		}
		return g.result(facts.ValidationPassed, "fabric registration completed")
	case nvml.GPU_FABRIC_STATE_IN_PROGRESS:
		return g.result(facts.ValidationFailed, "fabric registration is still in progress")
	case nvml.GPU_FABRIC_STATE_NOT_STARTED:
		return g.result(facts.ValidationFailed, "fabric registration has not started (is the fabric manager running?)")
	case nvml.GPU_FABRIC_STATE_NOT_SUPPORTED:
		if preHopper {
			return g.result(facts.ValidationPassed, "reports no fabric state (before Hopper); judged by the fabric manager and the NVSwitches")
		}
		return g.result(facts.ValidationFailed, "NVML says this GPU takes no part in a fabric, on an NVSwitch system")
	}
	return g.result(facts.ValidationNotRun, fmt.Sprintf("NVML gave fabric state %d, which this validator does not know", info.State))
}
