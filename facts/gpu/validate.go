package gpu

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// The validation steps, in the order they run: gpu-operator's validator
// sequence (driver, toolkit, CUDA, plugin), with the NVSwitch fabric and the
// MIG mode in place of the device plugin, which a node without Kubernetes
// does not have.
const (
	StepDriver    = "driver"
	StepContainer = "container"
	StepCUDA      = "cuda"
	StepFabric    = "fabric"
	StepMIG       = "mig"
)

// SkippableSteps are the steps a caller may leave out. The driver step is
// not among them: every other step reads the GPUs it lists.
func SkippableSteps() []string { return []string{StepContainer, StepCUDA, StepFabric, StepMIG} }

// The MIG modes a validation may want of every GPU.
const (
	MIGEnabled  = "enabled"
	MIGDisabled = "disabled"
	MIGAny      = "any"
)

// Verdicts of a whole validation.
const (
	VerdictPassed     = "passed"
	VerdictFailed     = "failed"
	VerdictIncomplete = "incomplete"
)

// DefaultStepTimeout bounds one step: the container's run, or the CUDA
// sample on every GPU in turn.
const DefaultStepTimeout = 2 * time.Minute

// VectorAddPath is where an image carries the CUDA sample the cuda step runs.
const VectorAddPath = "/usr/lib/gpuhost/validate/vectorAdd"

// Validator holds a live node to the validation steps. Validate records
// every step, run or not, with its reason; it returns an error only when the
// validation as a whole was cut short (ctx ended).
type Validator interface {
	Validate(ctx context.Context, env *collect.Env) (*facts.GPUValidation, error)
}

// ValidateOption tunes a Validator.
type ValidateOption func(*validator)

// WithStepTimeout bounds each step (default DefaultStepTimeout).
func WithStepTimeout(d time.Duration) ValidateOption {
	return func(v *validator) {
		if d > 0 {
			v.timeout = d
		}
	}
}

// WithMIG sets the MIG mode every GPU must be in: MIGEnabled, MIGDisabled
// or MIGAny (the default).
func WithMIG(want string) ValidateOption { return func(v *validator) { v.mig = want } }

// WithSkip leaves steps out: each is recorded as not run, and not required.
func WithSkip(steps ...string) ValidateOption {
	return func(v *validator) {
		for _, s := range steps {
			v.skip[s] = true
		}
	}
}

// WithImage names the image the container step runs; by default it is the
// first image the gpuhost-gpu provisioner seeded.
func WithImage(ref string) ValidateOption { return func(v *validator) { v.image = ref } }

// WithRunner replaces how programs are run on the host (NewHostRunner of
// the environment's root by default).
func WithRunner(r Runner) ValidateOption { return func(v *validator) { v.run = r } }

type validator struct {
	lib     nvml.Interface
	timeout time.Duration
	mig     string
	skip    map[string]bool
	image   string
	run     Runner
}

// NewValidator returns a Validator that asks lib (nvml.New() on a host, a
// go-nvml mock in tests) about the GPUs.
func NewValidator(lib nvml.Interface, opts ...ValidateOption) Validator {
	v := &validator{lib: lib, timeout: DefaultStepTimeout, mig: MIGAny, skip: map[string]bool{}}
	for _, o := range opts {
		o(v)
	}
	return v
}

// MIGWant reads params.gpu_mig, which GH-GPU-009 reads too, as the MIG mode
// every GPU must be in: true is enabled, false disabled, null or absent any.
func MIGWant(params map[string]any) (string, error) {
	switch w := params["gpu_mig"].(type) {
	case nil:
		return MIGAny, nil
	case bool:
		if w {
			return MIGEnabled, nil
		}
		return MIGDisabled, nil
	default:
		return "", fmt.Errorf("params.gpu_mig is %v; want true, false or null", w)
	}
}

// session is one validation's state: the NVML calls' deadline keeper and
// the GPUs the driver step listed.
type session struct {
	v       *validator
	env     *collect.Env
	call    *caller
	run     Runner
	gpus    []gpuInfo
	started bool
}

// gpuInfo is one GPU as the driver step listed it.
type gpuInfo struct {
	index int
	uuid  string
	name  string
	minor int
	dev   nvml.Device
}

func (v *validator) Validate(ctx context.Context, env *collect.Env) (*facts.GPUValidation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &session{v: v, env: env, call: &caller{timeout: DefaultCallTimeout}, run: v.run}
	if s.run == nil {
		s.run = NewHostRunner(env.FS.Root())
	}
	out := &facts.GPUValidation{GPUs: []facts.ValidationGPU{}, Steps: []facts.ValidationStep{}}
	driver := s.driver(ctx)
	out.Steps = append(out.Steps, driver)
	defer s.shutdown(ctx)
	for _, g := range s.gpus {
		out.GPUs = append(out.GPUs, facts.ValidationGPU{Index: g.index, UUID: g.uuid, Name: g.name})
	}
	steps := []struct {
		name string
		run  func(context.Context) facts.ValidationStep
	}{{StepContainer, s.container}, {StepCUDA, s.cuda}, {StepFabric, s.fabric}, {StepMIG, s.migMode}}
	for _, st := range steps {
		var step facts.ValidationStep
		switch {
		case v.skip[st.name]:
			step = facts.ValidationStep{Name: st.name, Status: facts.ValidationNotRun, Reason: "left out on request"}
		case driver.Status != facts.ValidationPassed:
			step = facts.ValidationStep{Name: st.name, Status: facts.ValidationNotRun, Required: s.requiredWithoutDriver(st.name),
				Reason: "needs the GPUs the driver step lists, and it did not pass"}
		default:
			sctx, cancel := context.WithTimeout(ctx, v.timeout)
			step = st.run(sctx)
			cancel()
		}
		out.Steps = append(out.Steps, step)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("validation cut short: %w", err)
	}
	return out, nil
}

// requiredWithoutDriver says whether a step the driver's failure kept from
// running was required: every step is, but the fabric only where the PCI bus
// shows NVSwitches, since without NVML the product is unknown.
func (s *session) requiredWithoutDriver(step string) bool {
	if step != StepFabric {
		return true
	}
	n, err := countNVSwitches(s.env)
	return err == nil && n > 0
}

func (s *session) shutdown(ctx context.Context) {
	// Shutdown after a hung call would queue behind it; leave it.
	if s.started && !s.call.wedged {
		_, _ = s.call.do(context.WithoutCancel(ctx), "Shutdown", s.v.lib.Shutdown)
	}
}

// Verdict sums a validation up: failed when a step failed, incomplete when
// none did but a required step did not run, passed otherwise.
func Verdict(v *facts.GPUValidation) string {
	incomplete := false
	for _, s := range v.Steps {
		switch {
		case s.Status == facts.ValidationFailed:
			return VerdictFailed
		case s.Status != facts.ValidationPassed && s.Required:
			incomplete = true
		}
	}
	if incomplete {
		return VerdictIncomplete
	}
	return VerdictPassed
}

// judge sets a step's status and reason from its per-GPU results: failed
// when any GPU failed, not run when any could not be judged, passed when
// every GPU passed. what says what was done to each GPU.
func judge(step facts.ValidationStep, what string) facts.ValidationStep {
	var failed, notRun []string
	for _, g := range step.GPUs {
		switch g.Status {
		case facts.ValidationFailed:
			failed = append(failed, fmt.Sprintf("GPU %d (%s): %s", g.Index, g.UUID, g.Detail))
		case facts.ValidationNotRun:
			notRun = append(notRun, fmt.Sprintf("GPU %d (%s): %s", g.Index, g.UUID, g.Detail))
		}
	}
	n := len(step.GPUs)
	switch {
	case len(failed) > 0:
		step.Status = facts.ValidationFailed
		step.Reason = fmt.Sprintf("%s failed on %d of %d GPUs: %s", what, len(failed), n, strings.Join(failed, "; "))
	case len(notRun) > 0:
		step.Status = facts.ValidationNotRun
		step.Reason = fmt.Sprintf("%s could not be judged on %d of %d GPUs: %s", what, len(notRun), n, strings.Join(notRun, "; "))
	default:
		step.Status = facts.ValidationPassed
		step.Reason = fmt.Sprintf("%s passed on every GPU (%d)", what, n)
	}
	return step
}

// result is one GPU's verdict within a step.
func (g gpuInfo) result(status, detail string) facts.ValidationGPUResult {
	return facts.ValidationGPUResult{Index: g.index, UUID: g.uuid, Status: status, Detail: detail}
}

func notRun(step facts.ValidationStep, reason string) facts.ValidationStep {
	step.Status, step.Reason = facts.ValidationNotRun, reason
	return step
}

func failed(step facts.ValidationStep, reason string) facts.ValidationStep {
	step.Status, step.Reason = facts.ValidationFailed, reason
	return step
}

func passed(step facts.ValidationStep, reason string) facts.ValidationStep {
	step.Status, step.Reason = facts.ValidationPassed, reason
	return step
}
