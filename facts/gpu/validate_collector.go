package gpu

import (
	"context"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// CollectValidation runs v, the same Validator as gpuhost validate, on a
// live host, its outcome to be recorded as gpu.validation for GH-GPU-022
// to judge, beside g, the GPU facts NVML gave (nil when there are none).
// No scan runs it unless asked (gpuhost agent --gpu-validate): it starts a
// container and runs CUDA on every GPU. The validation's failures are
// facts, not the collector's: it errs only when the validation was cut
// short.
func CollectValidation(ctx context.Context, env *collect.Env, v Validator, g *facts.GPU) (*facts.GPUValidation, error) {
	if !env.Live {
		return nil, collect.NotApplicable("validation runs the GPUs of a running host; an image has none")
	}
	if g == nil {
		return nil, collect.Unavailable("the gpu collector recorded no GPU facts to add the validation to")
	}
	return v.Validate(ctx, env)
}
