package osinfo

import (
	"context"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/packages"
)

// newDoc is an empty facts document of the given target kind for the
// tests to collect into.
func newDoc(kind string) *facts.Facts {
	return facts.New(kind, "test", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
}

// collectOne runs the collect function of the document key name over env
// into f, reading what f already holds as the loop would, and returns its
// raw error.
func collectOne(t testing.TB, env *collect.Env, f *facts.Facts, name string) (err error) {
	t.Helper()
	ctx := context.Background()
	switch name {
	case "os":
		var host string
		f.OS, host, err = CollectOS(ctx, env)
		if host != "" {
			f.Target.Hostname = host
		}
	case "kernel":
		f.Kernel, err = CollectKernel(ctx, env)
	case "systemd":
		f.Systemd, err = CollectSystemd(ctx, env, f.Packages)
	case "cgroup":
		f.Cgroup, err = CollectCgroup(ctx, env, f.Kernel, f.Packages)
	case "kernel_modules":
		f.KernelModules, err = CollectKernelModules(ctx, env)
	case "sysctl":
		f.Sysctl, err = CollectSysctl(ctx, env)
	case "limits":
		f.Limits, err = CollectLimits(ctx, env)
	case "packages":
		f.Packages, err = packages.CollectPackages(ctx, env)
	default:
		t.Fatalf("no collector %q", name)
	}
	return err
}

// gather runs the named collect functions in order, whatever each
// answers, as the loop records an outcome and goes on.
func gather(t testing.TB, env *collect.Env, f *facts.Facts, names ...string) {
	t.Helper()
	for _, n := range names {
		_ = collectOne(t, env, f, n)
	}
}

// parseOSRelease is what the os collector makes of one os-release file.
func parseOSRelease(data []byte) (*facts.OS, error) {
	vars, err := OSReleaseVars(data)
	if err != nil {
		return nil, err
	}
	return osFacts(vars), nil
}
