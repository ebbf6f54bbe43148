package gpu_test

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/reports"
)

// gpuOnly is the embedded pack cut down to the policies whose path starts
// with prefix, plus its top-level files (params and their schema).
func gpuOnly(tb testing.TB, prefix string) *engine.Source {
	tb.Helper()
	only := fstest.MapFS{}
	err := fs.WalkDir(policies.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasPrefix(p, prefix) || !strings.Contains(p, "/")) {
			return err
		}
		data, err := fs.ReadFile(policies.FS, p)
		only[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	src, err := engine.LoadFS(only, "gpu-only")
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

// gpuEngine compiles the policies whose path starts with prefix.
func gpuEngine(tb testing.TB, prefix string) *engine.Engine {
	tb.Helper()
	src := gpuOnly(tb, prefix)
	// No memo: every iteration is evaluated by OPA, as a fleet of hosts with
	// differing GPU readings would be.
	e, err := engine.New(context.Background(), engine.WithSource(src), engine.WithParams(fleetParams))
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// fullDGXFacts is a collected mock DGX A100 plus the installed stack, as
// fullDGXDocument evaluates it.
func fullDGXFacts(tb testing.TB) *facts.Facts {
	tb.Helper()
	f := collectHost(tb, dgxA100(), hostTree(tb, "550.54.15", kernLog))
	f.GPUDriver = &facts.GPUDriver{
		Packages:            []facts.Package{{Name: "nvidia-driver-550-server", Version: "550.54.15-0ubuntu1", Arch: "amd64", Held: true}},
		Version:             "550.54.15",
		Branch:              550,
		Flavor:              "proprietary",
		Modules:             map[string][]string{"6.8.0-45-generic": {"nvidia.ko"}},
		NouveauBlacklisted:  true,
		PersistencedEnabled: true,
		CUDAToolkitVersion:  "12.4",
		CUDAToolkitSource:   "cuda-toolkit-12-4",
		MaxCUDA:             "12.4",
	}
	f.Record("gpu_driver", facts.StatusOK, "")
	return f
}

// fullDGXDocument is a collected mock DGX A100 plus the installed stack
// (gpu_driver), so that every GPU check runs rather than being gated out.
func fullDGXDocument(tb testing.TB) *engine.Document {
	tb.Helper()
	doc, _, err := engine.NewDocument(fullDGXFacts(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return doc
}

// benchEvaluate times engine.Evaluate alone: the facts are already an AST
// document, so this is the policies' own cost per host, without JSON
// encoding or report building.
func benchEvaluate(b *testing.B, prefix string, want int) {
	e := gpuEngine(b, prefix)
	doc := fullDGXDocument(b)
	ctx := context.Background()
	res, err := e.Evaluate(ctx, doc)
	if err != nil {
		b.Fatal(err)
	}
	if want >= 0 && len(res) != want {
		b.Fatalf("%d checks, want %d", len(res), want)
	}
	for _, r := range res {
		if r.Status == reports.StatusError || (r.Status == reports.StatusSkip && strings.Contains(strings.Join(r.Messages, " "), "collector")) {
			b.Fatalf("%s did not run: %s %q", r.ID, r.Status, r.Messages)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	for b.Loop() {
		if _, err := e.Evaluate(ctx, doc); err != nil {
			b.Fatal(err)
		}
	}
	// Wall time swings with the machine's load; CPU time much less.
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkGPUPolicies evaluates all 19 GH-GPU- checks against one 8-GPU
// host's facts (target: < 1 ms per host).
func BenchmarkGPUPolicies(b *testing.B) { benchEvaluate(b, "gpu/", 19) }

// BenchmarkGPUPolicyBaseline is the same evaluation with one trivial check:
// the engine's fixed cost per query, for comparison.
func BenchmarkGPUPolicyBaseline(b *testing.B) { benchEvaluate(b, "gpu/nouveau_blacklisted", 1) }

// BenchmarkGPUPoliciesFleet evaluates the same checks as a fleet scan
// does, with the memo on, over hosts that differ as a fleet's do: every
// GPU's UUID and temperature, and no Xid logged. Per host, only the checks
// that read what differs (the temperatures) are evaluated again.
func BenchmarkGPUPoliciesFleet(b *testing.B) {
	src := gpuOnly(b, "gpu/")
	e, err := engine.New(context.Background(), engine.WithSource(src), engine.WithParams(fleetParams))
	if err != nil {
		b.Fatal(err)
	}
	base := fullDGXFacts(b)
	base.GPU.XIDEvents = nil
	const hosts = 512
	docs := make([]*engine.Document, hosts)
	for h := range docs {
		f := *base
		g := *base.GPU
		g.Devices = slices.Clone(g.Devices)
		for i := range g.Devices {
			d := &g.Devices[i]
			d.UUID = fmt.Sprintf("GPU-%08x-%04x", h, i)
			t := 30 + (h*131+i*17)%47
			d.TemperatureC = &t
		}
		f.GPU = &g
		if docs[h], _, err = engine.NewDocument(&f); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := e.Evaluate(ctx, docs[i%hosts]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkGPUPolicyEach(b *testing.B) {
	entries, _ := fs.ReadDir(policies.FS, "gpu")
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "_test.rego") || !strings.HasSuffix(e.Name(), ".rego") {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ".rego")
		b.Run(name, func(b *testing.B) { benchEvaluateAny(b, "gpu/"+name+".rego") })
	}
}

func benchEvaluateAny(b *testing.B, prefix string) { benchEvaluate(b, prefix, -1) }
