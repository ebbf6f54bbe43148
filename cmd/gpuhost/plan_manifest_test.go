//go:build !lean

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func runCmd(t *testing.T, build func(a *app) *cobra.Command, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut}
	cmd := build(a)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestPlanCommandPrintsGoldenPlan(t *testing.T) {
	cases := filepath.Join("..", "..", "builder", "gpu", "testdata")
	out, err := runCmd(t, (*app).planCommand, "", "--config", filepath.Join(cases, "cases", "debian-12-debian-535.json"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(cases, "golden", "plan-debian-12-debian-535.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Error("gpuhost plan differs from the provisioner's golden plan")
	}
}

func TestPlanCommandRejectsBadConfig(t *testing.T) {
	_, err := runCmd(t, (*app).planCommand, `{"driver": {"version": "535.261.03-1", "source": "debian"}, "ngc_images": [{"ref": "nvcr.io/nvidia/cuda:12.8.1-base"}]}`, "--config", "-")
	if err == nil || !strings.Contains(err.Error(), "pin ngc image nvcr.io/nvidia/cuda:12.8.1-base by digest") {
		t.Errorf("err = %v", err)
	}
	// Without a distribution the plan cannot be rendered offline.
	_, err = runCmd(t, (*app).planCommand, `{"driver": {"version": "535.261.03-1", "source": "debian"}}`, "--config", "-")
	if err == nil || !strings.Contains(err.Error(), "distro.id") {
		t.Errorf("err = %v", err)
	}
	// A CUDA pin the driver branch cannot run is refused before any plan.
	keys := `"keyring_sha256": {"cuda_keyring": "` + strings.Repeat("0", 64) + `", "container_toolkit_key": "` + strings.Repeat("1", 64) + `"}`
	_, err = runCmd(t, (*app).planCommand, `{"driver": {"version": "550.163.01-0ubuntu1"}, "cuda": {"version": "12.8.1-1"}, "container_toolkit": {"version": "1.17.8-1"}, `+keys+`, "distro": {"id": "ubuntu", "version_id": "22.04", "codename": "jammy"}}`, "--config", "-")
	if err == nil || !strings.Contains(err.Error(), "CUDA 12.8 needs a newer driver than branch 550, which supports CUDA up to 12.4") {
		t.Errorf("CUDA 12.8 on branch 550: err = %v", err)
	}
}

func TestManifestRootfsCommand(t *testing.T) {
	root := filepath.Join("testdata", "rootfs-hardened")
	if _, err := os.Stat(filepath.Join(root, "var/lib/dpkg/status")); err != nil {
		t.Skip("sample rootfs has no dpkg database")
	}
	out, err := runCmd(t, (*app).manifestCommand, "", "rootfs", root, "--template", "sample")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["schema"] != "gpuhost.manifest/v1" || doc["build"].(map[string]any)["template"] != "sample" {
		t.Errorf("manifest %v", doc)
	}

	// -o writes the file instead, atomically.
	dst := filepath.Join(t.TempDir(), "manifest.json")
	out, err = runCmd(t, (*app).manifestCommand, "", "rootfs", root, "-o", dst,
		"--config", filepath.Join("..", "..", "builder", "gpu", "testdata", "cases", "debian-12-debian-535.json"))
	if err != nil {
		t.Fatal(err)
	}
	if out != "" {
		t.Error("-o also printed to stdout")
	}
	data, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"driver": "535.261.03-1"`) {
		t.Error("pins from --config missing")
	}
}

func TestManifestRootfsNeedsDpkg(t *testing.T) {
	_, err := runCmd(t, (*app).manifestCommand, "", "rootfs", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "/var/lib/dpkg/status") {
		t.Errorf("err = %v", err)
	}
}
