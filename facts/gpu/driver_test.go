package gpu_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/target/domains"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func collectDriver(t *testing.T, dir string, f *facts.Facts) error {
	t.Helper()
	fsys, closer, err := sysroot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return domains.GPUDriver().Collect(context.Background(), &collect.Env{FS: fsys}, f)
}

func imageFacts(pkgs ...facts.Package) *facts.Facts {
	f := facts.New(facts.KindRootfs, "img", now)
	f.Record("packages", facts.StatusOK, "")
	f.Packages = pkgs
	return f
}

func pkg(name, version string) facts.Package {
	return facts.Package{Name: name, Version: version, Arch: "amd64"}
}

// TestDriverDebian is the Debian 12 stand-in: NVIDIA 535 from non-free,
// DKMS-built modules, the nouveau blacklist the packages ship, CUDA 11.8.
func TestDriverDebian(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko.xz":           "",
		"lib/modules/6.1.0-18-amd64/updates/dkms/nvidia-uvm.ko.xz":       "",
		"lib/modules/6.1.0-18-amd64/kernel/drivers/video/fbdev/vga16.ko": "",
		"lib/modules/6.1.0-17-amd64/kernel/fs/ext4/ext4.ko":              "",
		"etc/modprobe.d/nvidia-blacklists-nouveau.conf":                  "# keep nouveau away\nblacklist nouveau\n",
		"etc/modprobe.d/other.conf":                                      "options snd-hda-intel power_save=0\n",
	})
	f := imageFacts(
		pkg("libnvidia-ml1", "535.261.03-1"), pkg("nvidia-driver", "535.261.03-1"),
		pkg("nvidia-kernel-dkms", "535.261.03-1"), pkg("nvidia-cuda-toolkit", "11.8.89~11.8.0-5~deb12u1"),
		pkg("openssh-server", "1:9.2p1-2"),
	)
	f.Systemd = &facts.Systemd{Enabled: []string{"nvidia-persistenced.service", "ssh.service"}}
	if err := collectDriver(t, dir, f); err != nil {
		t.Fatal(err)
	}
	d := f.GPUDriver
	if d.Version != "535.261.03" || d.Branch != 535 || d.Flavor != "proprietary" || d.MaxCUDA != "12.2" {
		t.Errorf("driver %q branch %d flavor %q max cuda %q", d.Version, d.Branch, d.Flavor, d.MaxCUDA)
	}
	if len(d.Packages) != 3 {
		t.Errorf("packages %+v", d.Packages)
	}
	want := map[string][]string{
		"6.1.0-18-amd64": {"/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia-uvm.ko.xz", "/lib/modules/6.1.0-18-amd64/updates/dkms/nvidia.ko.xz"},
		"6.1.0-17-amd64": {},
	}
	if len(d.Modules) != 2 || !slices.Equal(d.Modules["6.1.0-18-amd64"], want["6.1.0-18-amd64"]) || len(d.Modules["6.1.0-17-amd64"]) != 0 {
		t.Errorf("modules %q", d.Modules)
	}
	if !d.NouveauBlacklisted || d.NouveauSource != "/etc/modprobe.d/nvidia-blacklists-nouveau.conf" {
		t.Errorf("nouveau %v %q", d.NouveauBlacklisted, d.NouveauSource)
	}
	if !d.PersistencedEnabled || d.FabricManagerEnabled {
		t.Errorf("units: persistenced %v fabricmanager %v", d.PersistencedEnabled, d.FabricManagerEnabled)
	}
	if d.CUDAToolkitVersion != "11.8" || d.CUDAToolkitSource != "nvidia-cuda-toolkit" {
		t.Errorf("toolkit %q from %q", d.CUDAToolkitVersion, d.CUDAToolkitSource)
	}
	if err := facts.Validate(f); err != nil {
		t.Errorf("facts do not validate: %v", err)
	}
}

// TestDriverUbuntu: Canonical's precompiled server modules, the open
// flavour, a cmdline blacklist and the newest of two toolkits.
func TestDriverUbuntu(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"lib/modules/5.15.0-105-generic/kernel/nvidia-535srv/nvidia.ko": "",
		"usr/local/cuda/version.json":                                   `{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}`,
	})
	f := imageFacts(
		pkg("nvidia-headless-no-dkms-535-server-open", "535.161.08-0ubuntu2.22.04.1"),
		pkg("libnvidia-compute-535-server", "535.161.08-0ubuntu2.22.04.1"),
		pkg("linux-modules-nvidia-535-server-open-generic", "5.15.0-105.115"),
		pkg("cuda-toolkit-12-2", "12.2.2-1"),
		pkg("nvidia-fabricmanager-535", "535.161.08-1"),
	)
	f.Kernel = &facts.Kernel{Cmdline: []string{"ro", "modprobe.blacklist=floppy,nouveau"}}
	f.Systemd = &facts.Systemd{Enabled: []string{"nvidia-fabricmanager.service"}}
	if err := collectDriver(t, dir, f); err != nil {
		t.Fatal(err)
	}
	d := f.GPUDriver
	if d.Version != "535.161.08" || d.Flavor != "open" {
		t.Errorf("version %q flavor %q", d.Version, d.Flavor)
	}
	if !slices.Equal(d.Modules["5.15.0-105-generic"], []string{"/lib/modules/5.15.0-105-generic/kernel/nvidia-535srv/nvidia.ko"}) {
		t.Errorf("modules %q", d.Modules)
	}
	if !d.NouveauBlacklisted || !strings.HasPrefix(d.NouveauSource, "kernel command line") {
		t.Errorf("nouveau %v %q", d.NouveauBlacklisted, d.NouveauSource)
	}
	if d.CUDAToolkitVersion != "12.4" || d.CUDAToolkitSource != "/usr/local/cuda/version.json" || !d.FabricManagerEnabled || d.PersistencedEnabled {
		t.Errorf("toolkit %q from %q, fm %v", d.CUDAToolkitVersion, d.CUDAToolkitSource, d.FabricManagerEnabled)
	}
}

func TestDriverNoneInstalled(t *testing.T) {
	f := imageFacts(pkg("bash", "5.2.15-2"))
	if err := collectDriver(t, t.TempDir(), f); err != nil {
		t.Fatal(err)
	}
	d := f.GPUDriver
	if d.Version != "" || d.Flavor != "" || d.NouveauBlacklisted || len(d.Packages) != 0 || d.CUDAToolkitVersion != "" {
		t.Errorf("no driver: %+v", d)
	}
}

func TestDriverNeedsPackages(t *testing.T) {
	f := facts.New(facts.KindRootfs, "img", now)
	f.Record("packages", facts.StatusError, "parsing /var/lib/dpkg/status: line 3")
	err := collectDriver(t, t.TempDir(), f)
	if st, reason := collect.Classify(err); st != facts.StatusUnavailable || !strings.Contains(reason, "packages collector is error") {
		t.Errorf("status %s %q", st, reason)
	}
	if f.GPUDriver != nil {
		t.Error("gpu_driver set without packages")
	}
}

func TestDriverBadFilesAreErrors(t *testing.T) {
	dir := writeTree(t, map[string]string{"usr/local/cuda/version.json": "{not json"})
	err := collectDriver(t, dir, imageFacts())
	if err == nil || !strings.Contains(err.Error(), "/usr/local/cuda/version.json") {
		t.Errorf("err %v, want one naming version.json", err)
	}
}

// TestDriverHostileModules: a symlink loop and a deep tree under
// /lib/modules neither hang nor escape.
func TestDriverHostileModules(t *testing.T) {
	dir := writeTree(t, map[string]string{"lib/modules/6.1.0/updates/a/b/c/d/e/f/g/h/nvidia.ko": ""})
	if err := os.Symlink("..", filepath.Join(dir, "lib/modules/6.1.0/updates/loop")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(dir, "lib/modules/6.1.0/extra")); err != nil {
		t.Fatal(err)
	}
	f := imageFacts()
	if err := collectDriver(t, dir, f); err != nil {
		t.Fatal(err)
	}
	if got := f.GPUDriver.Modules["6.1.0"]; len(got) != 0 {
		t.Errorf("modules %q, want none (too deep, or through links)", got)
	}
}
