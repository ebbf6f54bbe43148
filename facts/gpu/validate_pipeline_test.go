package gpu_test

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/gpu"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/target"
	"github.com/gpuhost/gpuhost/target/collector"
	"github.com/gpuhost/gpuhost/target/domains"
)

var update = flag.Bool("update", false, "rewrite the facts fixtures under testdata/validation")

// fabricFixture is a mock HGX H100's facts with the agent's validation,
// GPU 5 still registering with the fabric: the policy path's fixture,
// written by TestValidationThroughTheAgentPath with -update.
const fabricFixture = "testdata/validation/hgx-h100-fabric-in-progress.json"

// collectValidated collects the gpu and gpu_validation collectors over dir
// as the agent does with --gpu-validate, the fabric manager active.
func collectValidated(t testing.TB, lib nvml.Interface, dir string, opts ...gpu.ValidateOption) *facts.Facts {
	t.Helper()
	fsys, closer, err := sysroot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	env := &collect.Env{FS: fsys, Live: true, UnitState: func(context.Context, string) (string, string) { return "active", "" }}
	cs := []collector.Collector{
		domains.GPU(lib, gpu.WithClock(func() time.Time { return now }), gpu.WithJournal(nil)),
		domains.GPUValidation(lib, opts...),
	}
	return target.Collect(context.Background(), env, facts.KindHost, "dgx-01", target.Options{Collectors: cs, Now: now})
}

// TestValidationThroughTheAgentPath collects the validation as the agent
// does and judges it with the pack: GH-GPU-022 passes a node whose every
// required step passed, fails one whose fabric is incomplete (naming the
// GPU), and errors where a required step could not run.
func TestValidationThroughTheAgentPath(t *testing.T) {
	s := newScanner(t)
	skip := gpu.WithSkip(gpu.StepContainer, gpu.StepCUDA)

	f := collectValidated(t, hgxH100(), hgxNode().tree(t), skip, gpu.WithMIG(gpu.MIGDisabled))
	if st := f.Collectors["gpu_validation"]; st.Status != facts.StatusOK {
		t.Fatalf("gpu_validation %s: %s", st.Status, st.Reason)
	}
	if r := scanFacts(t, s, f)["GH-GPU-022"]; r.Status != reports.StatusPass {
		t.Errorf("healthy HGX H100: GH-GPU-022 %s %q", r.Status, r.Messages)
	}

	lib := hgxH100()
	inProgress(lib, 5)
	f = collectValidated(t, lib, hgxNode().tree(t), skip, gpu.WithMIG(gpu.MIGDisabled))
	want := "step fabric: GPU 5 (" + gpuUUID(5) + "): fabric registration is still in progress"
	if r := scanFacts(t, s, f)["GH-GPU-022"]; r.Status != reports.StatusFail || strings.Join(r.Messages, "|") != want {
		t.Errorf("fabric in progress: GH-GPU-022 %s %q, want fail %q", r.Status, r.Messages, want)
	}
	testutil.GoldenJSON(t, fabricFixture, f, *update)

	f = collectValidated(t, hgxH100(), hgxNode().tree(t))
	r := scanFacts(t, s, f)["GH-GPU-022"]
	if r.Status != reports.StatusError || !strings.Contains(strings.Join(r.Messages, "|"), "step cuda did not run, and the node needs it: no vectorAdd at /usr/lib/gpuhost/validate/vectorAdd") {
		t.Errorf("no vectorAdd: GH-GPU-022 %s %q, want an error", r.Status, r.Messages)
	}

	if r := scanFacts(t, s, collectHost(t, dgxH100(), hostTree(t, "550.54.15", cleanLog)))["GH-GPU-022"]; r.Status != reports.StatusSkip {
		t.Errorf("without the collector: GH-GPU-022 %s %q, want skip", r.Status, r.Messages)
	}
}

// TestValidationFixture judges the saved facts as gpuhost scan facts would:
// the document validates, and GH-GPU-022 fails on GPU 5 alone.
func TestValidationFixture(t *testing.T) {
	data, err := os.ReadFile(fabricFixture)
	if err != nil {
		t.Fatal(err)
	}
	if err := facts.ValidateJSON(data); err != nil {
		t.Fatal(err)
	}
	doc, err := engine.ParseDocument(data, fabricFixture)
	if err != nil {
		t.Fatal(err)
	}
	results, err := gpuEngine(t, "gpu/").Evaluate(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.ID == "GH-GPU-022" {
			if r.Status != reports.StatusFail || len(r.Findings) != 1 || r.Findings[0].Subject != gpuUUID(5) {
				t.Errorf("GH-GPU-022 %s %q %+v, want one failure on GPU 5", r.Status, r.Messages, r.Findings)
			}
			return
		}
	}
	t.Error("GH-GPU-022 did not run")
}

// inProgress leaves GPU i registering with the fabric.
func inProgress(s *server.Server, i int) {
	device(s, i).GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) {
		return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_IN_PROGRESS}, nvml.SUCCESS
	}
}
