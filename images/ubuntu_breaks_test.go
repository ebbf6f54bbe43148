package images

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/builder/gpu"
	"github.com/gpuhost/gpuhost/internal/testutil/nvidiarepo"
	"github.com/gpuhost/gpuhost/reports"
)

// ubuntuBakeFunc bakes template (a path) with some variables changed and
// returns the rootfs, the build's output and its error.
type ubuntuBakeFunc func(t *testing.T, name, template string, change map[string]string) (string, string, error)

// ubuntuBreaks breaks each guarantee of the Ubuntu bake once, and each
// bake must fail naming the package: a driver pin the archive lacks, a
// CUDA component whose release build is gone while a later release's is
// there, a keyring whose digest is not the pin, and a held package that a
// later provisioner releases and apt upgrades, which the gate catches.
func ubuntuBreaks(t *testing.T, tp ubuntuTemplate, bake ubuntuBakeFunc, nv *nvidiarepo.Layout, nvBase string) {
	mustFailWith := func(t *testing.T, name string, change map[string]string, want ...string) {
		t.Helper()
		_, log, err := bake(t, name, tp.file, change)
		if err == nil {
			t.Fatalf("bake %s passed", name)
		}
		for _, w := range want {
			if !strings.Contains(log, w) {
				t.Errorf("bake %s: no %q in:\n%s", name, w, log)
			}
		}
		t.Logf("bake %s failed: %s", name, firstLineWith(log, want[0]))
	}
	t.Run("a driver pin the archive lacks", func(t *testing.T) {
		// 580.82.07 is a real 580 release the stand-in does not publish.
		versions := nv.DriverVersions
		mustFailWith(t, "missing-driver",
			map[string]string{"driver_versions": fmt.Sprintf(`{"535" = %q, "550" = %q, "580" = "580.82.07-0ubuntu1"}`, versions["535"][0], versions["550"][0])},
			"gpuhost-gpu: nvidia-driver-580-open=580.82.07-0ubuntu1 is not in the apt sources, which have nvidia-driver-580-open at: "+versions["580"][1]+", "+versions["580"][0],
			"gpuhost-gpu failed in step: pins available")
	})
	t.Run("a CUDA component only a later release builds", func(t *testing.T) {
		release := nvidiarepo.CUDAVersions["13.0"][0]
		own := nvidiarepo.CUDAComponents[release]["cuda-nvcc"]
		later := nvidiarepo.CUDAComponents[nvidiarepo.CUDAVersions["13.0"][1]]["cuda-nvcc"]
		withdrawn, base := nvidiarepo.Start(t, nvidiarepo.Options{Official: gpu.DefaultCUDARepositories, Distro: tp.distro, Withdrawn: []string{"cuda-nvcc-13-0=" + own}})
		mustFailWith(t, "withdrawn-component", nvidiaVars(withdrawn, base),
			fmt.Sprintf("cuda-nvcc-13-0 %s, the build of it that cuda-compiler-13-0 %s names, is not in the apt sources, which have cuda-nvcc-13-0 at: %s; a later build belongs to another CUDA release, which the pin keeps out",
				strings.TrimSuffix(own, "-1"), release, later),
			"gpuhost-gpu failed in step: cuda set")
	})
	t.Run("a keyring digest that is not the pin", func(t *testing.T) {
		wrong := strings.Repeat("0", 63) + "1"
		mustFailWith(t, "wrong-keyring", map[string]string{"cuda_keyring_sha256": wrong},
			fmt.Sprintf("gpuhost-gpu: sha256 of %s/%s/%s/%s/%s is %s, want %s", nvBase, nv.CUDARepos, tp.distro, nvidiarepo.CUDAArch, nvidiarepo.KeyringDeb, nv.KeyringSHA256, wrong),
			"gpuhost-gpu failed in step: cuda repository")
	})
	t.Run("a held package a later provisioner upgrades", func(t *testing.T) {
		// The template as a pipeline might extend it: its own shell step
		// after the plan releases the toolkit's holds and upgrades, and
		// apt takes the repository's newer toolkit. The plan's own checks
		// have run by then; the gate's pin checks must catch it.
		template := upgradingTemplate(t, tp)
		_, log, err := bake(t, "upgraded-hold", template, nil)
		if err == nil {
			t.Fatalf("the bake passed with held packages upgraded:\n%s", log)
		}
		rep := gateReport(t, log)
		newer := nvidiarepo.ToolkitVersions[2]
		var named bool
		for _, r := range rep.Results {
			if r.ID == "GH-PIN-001" && r.Status == reports.StatusFail {
				named = strings.Contains(strings.Join(r.Messages, "\n"), "nvidia-container-toolkit") && strings.Contains(strings.Join(r.Messages, "\n"), newer)
				t.Logf("GH-PIN-001: %s", strings.Join(r.Messages, "; "))
			}
		}
		if !named {
			t.Errorf("GH-PIN-001 does not fail naming nvidia-container-toolkit at %s: %s", newer, gateSummary(rep))
		}
		if !strings.Contains(log, "nothing published") {
			t.Errorf("the gate did not stop the build:\n%s", lastLines(log, 20))
		}
	})
}

// upgradingTemplate copies the template and the files beside it that it
// reads into a directory of its own, laid out as the repository (the
// host's files and script beside it, deploy/ above it), with a shell
// provisioner added after the gpuhost-gpu plan that releases the
// toolkit's holds and runs apt-get upgrade.
func upgradingTemplate(t *testing.T, tp ubuntuTemplate) string {
	t.Helper()
	top := t.TempDir()
	dir := filepath.Join(top, "images")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{filepath.Join(top, "deploy"): "../deploy", filepath.Join(dir, "files"): "files", filepath.Join(dir, "scripts"): "scripts"} {
		if err := os.Symlink(mustAbs(t, target), link); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{tp.file, tp.params, "waivers-ubuntu-" + tp.version + ".yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if name == tp.file {
			const anchor = "  # Nothing is published unless the image passes the pack at fail_on.\n"
			if !strings.Contains(string(data), anchor) {
				t.Fatalf("%s has no %q to add a provisioner before", name, anchor)
			}
			data = []byte(strings.Replace(string(data), anchor, `  provisioner "shell" {
    environment_vars = ["DEBIAN_FRONTEND=noninteractive"]
    inline           = ["apt-mark unhold nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1", "apt-get update", "apt-get -y upgrade"]
  }

`+anchor, 1))
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, tp.file)
}

// firstLineWith is the first line of log that contains s.
func firstLineWith(log, s string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, s) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}
