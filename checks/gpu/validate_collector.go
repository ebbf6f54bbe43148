package gpu

import (
	"context"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

type validationCollector struct{ v Validator }

var _ collector.Collector = validationCollector{}

// NewValidationCollector returns the "gpu_validation" collector: the same
// Validator as gpuhost validate, run on a live host, its outcome recorded
// as gpu.validation for GH-GPU-022 to judge. It is not among Collectors():
// it starts a container and runs CUDA on every GPU, so a scan runs it only
// when asked (gpuhost agent --gpu-validate).
func NewValidationCollector(lib nvml.Interface, opts ...ValidateOption) collector.Collector {
	return validationCollector{v: NewValidator(lib, opts...)}
}

func (validationCollector) Name() string { return "gpu_validation" }

// Needs gpu: it adds its block to the gpu collector's facts.
func (validationCollector) Needs() []string { return []string{"gpu"} }

// Collect validates the host. The validation's failures are facts, not the
// collector's: it errs only when the validation was cut short.
func (c validationCollector) Collect(ctx context.Context, env *collect.Env, f *facts.Facts) error {
	if !env.Live {
		return collect.NotApplicable("validation runs the GPUs of a running host; an image has none")
	}
	if f.GPU == nil {
		return collect.Unavailable("the gpu collector recorded no GPU facts to add the validation to")
	}
	v, err := c.v.Validate(ctx, env)
	if err != nil {
		return err
	}
	f.GPU.Validation = v
	return nil
}
