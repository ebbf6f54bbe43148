package gpu

import (
	"context"
	"errors"
	"fmt"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// cuda is step 3: the CUDA sample vectorAdd passes on each GPU in turn,
// each run shown only that GPU. The GPU is named by its UUID, with
// CUDA_DEVICE_ORDER=PCI_BUS_ID beside it: CUDA's own order (fastest first)
// need not be NVML's, so an index could name another GPU.
func (s *session) cuda(ctx context.Context) facts.ValidationStep {
	step := facts.ValidationStep{Name: StepCUDA, Required: true}
	info, err := s.env.FS.Stat(VectorAddPath)
	switch {
	case sysroot.IsNotExist(err):
		return notRun(step, fmt.Sprintf("no vectorAdd at %s: the image carries no CUDA sample to run", s.env.FS.Display(VectorAddPath)))
	case err != nil:
		return notRun(step, fmt.Sprintf("vectorAdd at %s cannot be read: %v", s.env.FS.Display(VectorAddPath), err))
	case !info.Mode().IsRegular() || info.Mode()&0o111 == 0:
		return notRun(step, fmt.Sprintf("%s is not an executable file", s.env.FS.Display(VectorAddPath)))
	}
	if missing := s.missingDeviceNodes(); missing != "" {
		return notRun(step, "no GPU device nodes for CUDA to open: "+missing)
	}
	for _, g := range s.gpus {
		step.GPUs = append(step.GPUs, s.vectorAdd(ctx, g))
	}
	return judge(step, "vectorAdd")
}

// vectorAdd runs the sample on one GPU. A GPU in MIG mode is not run: CUDA
// sees its MIG devices, not the GPU, and this step does not list them.
func (s *session) vectorAdd(ctx context.Context, g gpuInfo) facts.ValidationGPUResult {
	if err := ctx.Err(); err != nil {
		return g.result(facts.ValidationNotRun, "not run: the step's time ran out before this GPU")
	}
	if cur, _, _ := s.readMIG(ctx, g); cur == MIGEnabled {
		return g.result(facts.ValidationNotRun, "MIG is enabled: CUDA runs on its MIG devices, which this step does not list")
	}
	env := []string{"CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=" + g.uuid}
	out, err := s.run.Run(ctx, env, VectorAddPath)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return g.result(facts.ValidationFailed, "vectorAdd did not finish within the step's time: "+tail(out, 2))
	case err != nil:
		return g.result(facts.ValidationFailed, fmt.Sprintf("vectorAdd %s: %s", exitText(err), tail(out, 2)))
	case !hasLine(out, "Test PASSED"):
		return g.result(facts.ValidationFailed, "vectorAdd exited 0 without \"Test PASSED\": "+tail(out, 2))
	}
	return g.result(facts.ValidationPassed, "vectorAdd: Test PASSED")
}
