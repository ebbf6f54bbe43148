package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpuhost/gpuhost/agent"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
)

// hgxMock is go-nvml's HGX H100 with fixed UUIDs and every GPU registered
// with the NVSwitch fabric; fault, when set, is applied to it.
func hgxMock(fault func(*server.Server)) func() nvml.Interface {
	return func() nvml.Interface {
		s := dgxh100.New()
		s.ErrorStringFunc = func(r nvml.Return) string { return r.Error() }
		for i, d := range s.Devices {
			dev := d.(*server.Device)
			dev.UUID = fmt.Sprintf("GPU-00000000-0000-4000-8000-%012d", i)
			dev.GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) {
				return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_COMPLETED, Status: uint32(nvml.SUCCESS)}, nvml.SUCCESS
			}
		}
		if fault != nil {
			fault(s)
		}
		return s
	}
}

// hgxHostRoot is an HGX H100's host root: the loaded module, eight GPUs and
// four NVSwitches on the PCI bus, and the toolkit's CDI spec.
func hgxHostRoot(t *testing.T, module string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  "+module+"  Fri Feb 16 23:25:20 UTC 2024\n")
	spec := "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: all\n"
	for i := range 8 {
		spec += fmt.Sprintf("- name: \"%d\"\n", i)
	}
	write("etc/cdi/nvidia.yaml", spec)
	for i := range 12 {
		class := "0x030200"
		if i >= 8 {
			class = "0x068000"
		}
		addr := fmt.Sprintf("sys/bus/pci/devices/0000:%02x:00.0/", 0x10+i)
		write(addr+"vendor", "0x10de\n")
		write(addr+"device", "0x2330\n")
		write(addr+"class", class+"\n")
	}
	return dir
}

// validateCmd runs gpuhost validate as main does, with the mock NVML and
// the fabric manager in state fm.
func validateCmd(t *testing.T, lib func() nvml.Interface, fm string, args ...string) outcome {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, newNVML: lib,
		unitState: func(context.Context, string) (string, string) { return fm, "" }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := a.execute(ctx, append([]string{"validate"}, args...))
	return outcome{code, out.String(), errOut.String()}
}

func validationOf(t *testing.T, o outcome) validationReport {
	t.Helper()
	var rep validationReport
	if err := json.Unmarshal([]byte(o.stdout), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s%s", err, o.stdout, o.stderr)
	}
	return rep
}

// TestValidateCommand holds gpuhost validate's exit codes and JSON to
// their contract: 0 every step the node needs passed; 1 a step failed; 2 a
// step the node needs did not run, or the command line or params are wrong.
func TestValidateCommand(t *testing.T) {
	root := hgxHostRoot(t, "550.54.15")
	skip := []string{"--host-root", root, "--skip", "container", "--skip", "cuda"}

	o := validateCmd(t, hgxMock(nil), "active", append(skip, "--format", "json")...)
	rep := validationOf(t, o)
	if o.code != 0 || rep.Verdict != "passed" || rep.ExitCode != 0 || rep.Schema != "gpuhost.validation/v1" || len(rep.GPUs) != 8 || len(rep.Steps) != 5 {
		t.Fatalf("healthy HGX H100: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	host, _ := os.Hostname()
	testutil.Golden(t, "testdata/validate/hgx-h100.json", []byte(strings.NewReplacer(root, "ROOT", `"hostname": "`+host+`"`, `"hostname": "HOST"`).Replace(o.stdout)), *update)

	fault := func(s *server.Server) {
		s.Devices[5].(*server.Device).GetGpuFabricInfoFunc = func() (nvml.GpuFabricInfo, nvml.Return) {
			return nvml.GpuFabricInfo{State: nvml.GPU_FABRIC_STATE_IN_PROGRESS}, nvml.SUCCESS
		}
	}
	o = validateCmd(t, hgxMock(fault), "active", skip...)
	for _, want := range []string{
		"fabric     failed   yes       fabric registration failed on 1 of 8 GPUs",
		"  GPU 5    failed             GPU-00000000-0000-4000-8000-000000000005: fabric registration is still in progress",
		"verdict: failed (exit 1)",
	} {
		if o.code != 1 || !strings.Contains(o.stdout, want) {
			t.Errorf("fabric in progress: exit %d, want 1 and %q in\n%s%s", o.code, want, o.stdout, o.stderr)
		}
	}

	o = validateCmd(t, hgxMock(nil), "active", "--host-root", root, "--format", "json")
	rep = validationOf(t, o)
	if o.code != 2 || rep.Verdict != "incomplete" || rep.ExitCode != 2 || rep.Steps[1].Status != "not_run" || !rep.Steps[1].Required {
		t.Errorf("no containerd, no vectorAdd: exit %d, want 2\n%s", o.code, o.stdout)
	}

	migOn := filepath.Join(t.TempDir(), "params.yaml")
	if err := os.WriteFile(migOn, []byte("gpu_mig: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o = validateCmd(t, hgxMock(nil), "active", append(skip, "--params", migOn, "--format", "json")...)
	if rep := validationOf(t, o); o.code != 1 || rep.Steps[4].Name != "mig" || rep.Steps[4].Status != "failed" || !strings.Contains(rep.Steps[4].Reason, "MIG enabled wanted") {
		t.Errorf("gpu_mig true on GPUs without MIG: exit %d, want 1\n%s", o.code, o.stdout)
	}

	o = validateCmd(t, hgxMock(nil), "active", "--host-root", hgxHostRoot(t, "535.161.08"), "--skip", "container,cuda")
	if o.code != 1 || !strings.Contains(o.stdout, "libnvidia-ml reports driver 550.54.15, but the loaded kernel module is 535.161.08") {
		t.Errorf("driver mismatch: exit %d, want 1\n%s%s", o.code, o.stdout, o.stderr)
	}
}

func TestValidateCommandUsage(t *testing.T) {
	badParams := filepath.Join(t.TempDir(), "params.yaml")
	if err := os.WriteFile(badParams, []byte("gpu_mig: maybe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"unknown step":    {[]string{"--skip", "driver"}, `"driver": want one or more of container, cuda, fabric, mig`},
		"bad format":      {[]string{"--format", "sarif"}, "want one of table, json"},
		"zero timeout":    {[]string{"--timeout", "0s"}, "want a duration above zero"},
		"params not read": {[]string{"--params", "/nonexistent/params.yaml"}, "reading --params"},
		"bad params":      {[]string{"--params", badParams}, "gpu_mig"},
		"an argument":     {[]string{"extra"}, "unknown command"},
	} {
		t.Run(name, func(t *testing.T) {
			o := validateCmd(t, hgxMock(nil), "active", c.args...)
			if o.code != 2 || !strings.Contains(o.stderr, c.want) || o.stdout != "" {
				t.Errorf("exit %d, want 2 and %q\nstdout: %s\nstderr: %s", o.code, c.want, o.stdout, o.stderr)
			}
		})
	}
}

// TestAgentGPUValidate: the agent's --gpu-validate adds the validation to
// each run, and GH-GPU-022 judges it in the recorded report.
func TestAgentGPUValidate(t *testing.T) {
	for _, c := range []struct {
		module, status string
	}{{"550.54.15", reports.StatusPass}, {"535.161.08", reports.StatusFail}} {
		t.Run(c.module, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "history.db")
			var out, errOut bytes.Buffer
			a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, newNVML: hgxMock(nil)}
			code := a.execute(t.Context(), []string{"agent", "--once", "--db", db, "--host-root", hgxHostRoot(t, c.module), "--allow-writable-host-root", "--gpu-validate", "driver,mig"})
			if !strings.HasPrefix(out.String(), "run 1:") {
				t.Fatalf("agent --once: exit %d\n%s%s", code, out.String(), errOut.String())
			}
			st, err := agent.OpenStore(t.Context(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			data, err := st.LatestReport(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var rep reports.Report
			if err := json.Unmarshal(data, &rep); err != nil {
				t.Fatal(err)
			}
			for _, r := range rep.Results {
				if r.ID == "GH-GPU-022" {
					if r.Status != c.status {
						t.Errorf("GH-GPU-022 %s %q, want %s", r.Status, r.Messages, c.status)
					}
					return
				}
			}
			t.Error("no GH-GPU-022 in the recorded report")
		})
	}
}
