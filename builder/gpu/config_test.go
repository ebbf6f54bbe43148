package gpu

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/builder/internal/sdctest"
)

func TestDecodeListsEveryProblem(t *testing.T) {
	_, err := DecodeJSON([]byte(`{
		"driver": {"version": "580.95.05-1; rm -rf /", "source": "ppa", "flavor": "closed", "branch": "550"},
		"cuda": {"version": "twelve"},
		"containerd": {"default_runtime": "crun"},
		"hold": {"packages": ["Bad Name"]},
		"ngc_images": [
			{"ref": "nvcr.io/nvidia/pytorch:24.08-py3"},
			{"ref": "pytorch:latest", "digest": "sha256:00"},
			{"ref": "nvcr.io/nvidia/cuda@sha256:` + strings.Repeat("a", 64) + `", "digest": "sha256:` + strings.Repeat("b", 64) + `"}
		],
		"distro": {"id": "fedora"},
		"target_kernel": "$(reboot)",
		"keyring_sha256": {"cuda_keyring": "ABC"},
		"execute_command": "sh script",
		"memory_limits": {"slice_max": {"kubepods.slice": "8G", "user.slice": "lots"}, "kubelet": {"system_reserved": "2GB", "eviction_hard": "5 percent"}}
	}`))
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		`driver.version: "580.95.05-1; rm -rf /" is not a package version`,
		`driver.source: "ppa" is not one of cuda-repo, ubuntu-archive, debian`,
		`driver.flavor: "closed" is not one of open, proprietary`,
		`cuda.version: "twelve" is not a CUDA version`,
		`container_toolkit.version: required`,
		`keyring_sha256.cuda_keyring: "ABC" is not 64 lower-case hex digits`,
		`containerd.default_runtime: "crun" is not one of nvidia, runc`,
		`hold.packages[0]: "Bad Name" is not a package name`,
		`target_kernel: "$(reboot)" is not a kernel release`,
		`ngc_images[0]: pin ngc image nvcr.io/nvidia/pytorch:24.08-py3 by digest`,
		`ngc_images[1]: ref: "pytorch:latest" is not registry/repository:tag`,
		`ngc_images[2]: digest: sha256:bbbb`,
		`distro.id: "fedora" is not one of ubuntu, debian`,
		`execute_command: must contain {{.Path}}`,
		`memory_limits.slice_max: "kubepods.slice" is not one of machine.slice, system.slice, user.slice`,
		`memory_limits.slice_max["user.slice"]: "lots" is not a systemd memory size`,
		`memory_limits.kubelet.system_reserved: "2GB" is not a memory quantity`,
		`memory_limits.kubelet.eviction_hard: "5 percent" is not a memory quantity`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	for _, line := range strings.Split(msg, "\n")[1:] {
		line = strings.TrimSpace(line)
		if line != "" && strings.ToLower(line[:1]) != line[:1] {
			t.Errorf("message not in lower case: %q", line)
		}
	}
}

func TestDecodeRejectsUnknownFields(t *testing.T) {
	if _, err := DecodeJSON([]byte(`{"driver": {"version": "535.261.03-1", "source": "debian"}, "drivr": {}}`)); err == nil {
		t.Error("an unknown field was accepted")
	}
}

func TestDecodeDefaults(t *testing.T) {
	cfg, err := DecodeJSON([]byte(`{"driver": {"version": "535.261.03-1", "source": "debian"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Driver.Branch != "535" || cfg.Driver.Flavor != FlavorProprietary || cfg.Containerd.DefaultRuntime != "runc" ||
		!cfg.Containerd.SystemdCgroup.True() || cfg.ExecuteCommand != "sh '{{.Path}}'" || cfg.RemoteFolder != "/tmp" {
		t.Errorf("defaults: %+v", cfg)
	}
	cfg, err = DecodeJSON([]byte(`{"driver": {"version": "580.95.05-0ubuntu1"}, "container_toolkit": {"version": "1.17.8-1"},
		"keyring_sha256": {"cuda_keyring": "` + strings.Repeat("0", 64) + `", "container_toolkit_key": "` + strings.Repeat("1", 64) + `"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Driver.Source != SourceCUDARepo || cfg.Driver.Flavor != FlavorOpen || cfg.Containerd.DefaultRuntime != "nvidia" {
		t.Errorf("cuda-repo defaults: %+v", cfg.Driver)
	}
}

func TestDistroMismatch(t *testing.T) {
	_, err := DecodeJSON([]byte(`{"driver": {"version": "535.261.03-1", "source": "debian"}, "distro": {"id": "ubuntu", "version_id": "22.04"}}`))
	if err == nil || !strings.Contains(err.Error(), "driver.source: debian needs distro.id debian") {
		t.Errorf("err = %v", err)
	}
	_, err = DecodeJSON([]byte(`{"driver": {"version": "580.95.05-0ubuntu1"}, "container_toolkit": {"version": "1.17.8-1"},
		"keyring_sha256": {"cuda_keyring": "` + strings.Repeat("0", 64) + `", "container_toolkit_key": "` + strings.Repeat("1", 64) + `"},
		"distro": {"id": "ubuntu", "version_id": "20.04"}}`))
	if err == nil || !strings.Contains(err.Error(), `distro.version_id: "20.04" has no CUDA repository`) {
		t.Errorf("err = %v", err)
	}
}

func TestNGCImageDigestInRef(t *testing.T) {
	img := NGCImage{Ref: "nvcr.io/nvidia/cuda@sha256:" + strings.Repeat("c", 64)}
	if msg := img.check(); msg != "" {
		t.Fatal(msg)
	}
	if img.PinnedDigest() != "sha256:"+strings.Repeat("c", 64) {
		t.Errorf("digest %q", img.PinnedDigest())
	}
}

func TestConfigSpecCoversEveryField(t *testing.T) {
	var p Provisioner
	spec := p.ConfigSpec()
	for _, key := range []string{"driver", "cuda", "container_toolkit", "fabric_manager", "persistenced", "cgroup_v2",
		"containerd", "hold", "disable_unattended_upgrades", "ngc_images", "distro", "target_kernel", "keyring_sha256", "manifest"} {
		if _, ok := spec[key]; !ok {
			t.Errorf("HCL2 spec lacks %s", key)
		}
	}
}

func TestListRemoteRefusesUnaskedFiles(t *testing.T) {
	comm := &packersdk.MockCommunicator{StartStdout: "/var/lib/dpkg/status\n/etc/shadow\n"}
	if _, err := listRemote(t.Context(), comm); err == nil || !strings.Contains(err.Error(), "/etc/shadow") {
		t.Errorf("err = %v", err)
	}
	comm = &packersdk.MockCommunicator{StartStdout: "/etc/containerd/conf.d/../../shadow.toml\n"}
	if _, err := listRemote(t.Context(), comm); err == nil {
		t.Error("an unclean path was accepted")
	}
	comm = &packersdk.MockCommunicator{StartStdout: "/var/lib/dpkg/status\n/etc/modprobe.d/nvidia.conf\n"}
	names, err := listRemote(t.Context(), comm)
	if err != nil || len(names) != 2 {
		t.Errorf("names %v, err %v", names, err)
	}
}

// TestGeneratedFilesAreFresh regenerates the HCL2 spec and the docs and
// compares them with the committed files.
func TestGeneratedFilesAreFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs packer-sdc")
	}
	sdc := sdctest.Find(t)
	const fix = "go generate ./builder/gpu"
	spec := sdctest.Spec(t, sdc, "config.go", "gpu", "Config,Driver,CUDA,DKMS,ContainerToolkit,Containerd,Hold,NGCImage,Distro,Keyrings,Repositories,ManifestConfig,MemoryLimits,KubeletMemory,Hardening,HardeningRoles,HardeningTLS,HardeningSSH,HardeningFirewall,HardeningAudit,HardeningSudo,HardeningJournald,HardeningBaseline")
	sdctest.Same(t, spec, "config.hcl2spec.go", fix)
	docs := sdctest.Docs(t, "provisioner-gpu.mdx", "go", "run", "./internal/gendocs", "-sdc", sdc, "-out")
	sdctest.Same(t, docs, "../../docs/provisioner-gpu.mdx", fix)
}

// TestCUDANewerThanTheDriverIsRefused: the compatibility matrix the gate
// judges images by is applied before baking, naming both pins and the
// newest CUDA the branch allows.
func TestCUDANewerThanTheDriverIsRefused(t *testing.T) {
	cfg := func(driver, cuda string) string {
		return `{"driver": {"version": "` + driver + `"}, "cuda": {"version": "` + cuda + `"}, "container_toolkit": {"version": "1.17.8-1"},
		"keyring_sha256": {"cuda_keyring": "` + strings.Repeat("0", 64) + `", "container_toolkit_key": "` + strings.Repeat("1", 64) + `"}}`
	}
	_, err := DecodeJSON([]byte(cfg("535.261.03-0ubuntu1", "12.8.1-1")))
	want := "cuda.version: CUDA 12.8 needs a newer driver than branch 535, which supports CUDA up to 12.2; pin CUDA 12.2 or older, or a newer driver branch"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CUDA 12.8 on 535: err = %v, want %q", err, want)
	}
	for _, ok := range []string{"12.2", "12.2.2-1", "11.8"} {
		if _, err := DecodeJSON([]byte(cfg("535.261.03-0ubuntu1", ok))); err != nil {
			t.Errorf("CUDA %s on 535 refused: %v", ok, err)
		}
	}
	if _, err := DecodeJSON([]byte(cfg("440.118.02-0ubuntu1", "11.0"))); err == nil || !strings.Contains(err.Error(), "driver branch 440 is older than any the compatibility matrix knows") {
		t.Errorf("an unknown old branch: err = %v", err)
	}
}

// TestRepositoriesAreHTTPSOrLoopback: a mirror may replace NVIDIA's
// repositories, over https, or over plain http only on this machine.
func TestRepositoriesAreHTTPSOrLoopback(t *testing.T) {
	base := `"driver": {"version": "580.95.05-0ubuntu1"}, "container_toolkit": {"version": "1.17.8-1"},
		"keyring_sha256": {"cuda_keyring": "` + strings.Repeat("0", 64) + `", "container_toolkit_key": "` + strings.Repeat("1", 64) + `"}`
	for _, ok := range []string{
		`{"cuda": "https://mirror.example/nvidia/cuda/repos/"}`,
		`{"cuda": "http://127.0.0.1:8080/cuda/repos", "container_toolkit": "http://localhost:9/deb", "container_toolkit_key": "http://[::1]:9/gpgkey"}`,
	} {
		cfg, err := DecodeJSON([]byte(`{` + base + `, "repositories": ` + ok + `}`))
		if err != nil {
			t.Errorf("%s refused: %v", ok, err)
			continue
		}
		if strings.HasSuffix(cfg.Repositories.CUDA, "/") || cfg.Repositories.ContainerToolkitKey == "" {
			t.Errorf("%s: decoded as %+v", ok, cfg.Repositories)
		}
	}
	_, err := DecodeJSON([]byte(`{` + base + `, "repositories": {"cuda": "http://mirror.example/cuda", "container_toolkit": "https://x.example/deb?a=1", "container_toolkit_key": "ftp://x.example/key"}}`))
	for _, want := range []string{
		`repositories.cuda: "http://mirror.example/cuda": plain http is allowed on loopback only`,
		`repositories.container_toolkit: "https://x.example/deb?a=1" is not an http(s) URL`,
		`repositories.container_toolkit_key: "ftp://x.example/key" is not an http(s) URL`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
	cfg, err := DecodeJSON([]byte(`{` + base + `}`))
	if err != nil || cfg.Repositories != (Repositories{DefaultCUDARepositories, DefaultToolkitRepository, DefaultToolkitKey}) {
		t.Errorf("defaults: %+v, %v", cfg.Repositories, err)
	}
}

func TestLockFileIsReadAndHeldToThePins(t *testing.T) {
	raw := func(lockFile string) map[string]interface{} {
		m := caseRaw(t, "debian-12-cuda-repo-open-535")
		m["lock_file"] = lockFile
		return m
	}
	if _, err := Decode(raw(filepath.Join("testdata", "locks", "debian-12-cuda-repo.lock"))); err != nil {
		t.Fatalf("the golden case's lock: %v", err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.lock")
	if err := os.WriteFile(bad, []byte("gpuhost.lock/v1\npackage nvidia-smi 535 amd64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Decode(raw(bad))
	if err == nil || !strings.Contains(err.Error(), `lock_file: parsing lock file "`+bad+`": line 2: package "nvidia-smi" is not name=version`) {
		t.Errorf("a bad lock: %v", err)
	}
	other := filepath.Join(dir, "other.lock")
	if err := os.WriteFile(other, []byte("gpuhost.lock/v1\npackage cuda-toolkit-12-2=12.2.2-1 amd64 "+strings.Repeat("c", 64)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Decode(raw(other))
	if err == nil || !strings.Contains(err.Error(), "lock_file: the configuration pins cuda-toolkit-12-2=12.2.0-1, which the lock "+other+" has at 12.2.2-1") {
		t.Errorf("a lock of another configuration: %v", err)
	}
	if _, err := Decode(raw(filepath.Join(dir, "none.lock"))); err == nil || !strings.Contains(err.Error(), "lock_file: reading lock file") {
		t.Errorf("a missing lock: %v", err)
	}
}

func TestDKMSSigningKeyNeedsBothFilesAndDKMS(t *testing.T) {
	base := `"driver": {"version": "535.261.03-1", "source": "%s"}, "container_toolkit": {"version": "1.17.8-1"}, "keyring_sha256": {"cuda_keyring": "` + strings.Repeat("0", 64) + `", "container_toolkit_key": "` + strings.Repeat("1", 64) + `"}`
	key := filepath.Join("testdata", "dkms", "signing.key")
	for _, tc := range []struct{ source, dkms, want string }{
		{"cuda-repo", `{"signing_key": "` + key + `"}`, "dkms.signing_certificate: required with the other"},
		{"cuda-repo", `{"signing_key": "` + key + `", "signing_certificate": "testdata/none.crt"}`, "dkms.signing_certificate: stat testdata/none.crt"},
		{"ubuntu-archive", `{"signing_key": "` + key + `", "signing_certificate": "` + key + `"}`, "dkms: the ubuntu-archive source installs Canonical's signed modules"},
	} {
		_, err := DecodeJSON([]byte("{" + fmt.Sprintf(base, tc.source) + `, "dkms": ` + tc.dkms + "}"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.dkms, err, tc.want)
		}
	}
}

// An ubuntu-archive driver needs no CUDA keyring; with CUDA it does, for
// the toolkit comes from NVIDIA's repository.
func TestArchiveDriverWithCUDANeedsTheCUDAKeyring(t *testing.T) {
	base := `"driver": {"version": "580.95.05-0ubuntu0.24.04.2", "source": "ubuntu-archive"}, "container_toolkit": {"version": "1.17.8-1"},` +
		` "distro": {"id": "ubuntu", "version_id": "24.04", "codename": "noble"}, "target_kernel": "6.8.0-87-generic",` +
		` "keyring_sha256": {"container_toolkit_key": "` + strings.Repeat("1", 64) + `"}`
	if _, err := DecodeJSON([]byte("{" + base + "}")); err != nil {
		t.Errorf("without CUDA: %v", err)
	}
	_, err := DecodeJSON([]byte("{" + base + `, "cuda": {"version": "13.0.1-1"}}`))
	if err == nil || !strings.Contains(err.Error(), "keyring_sha256.cuda_keyring: required with cuda.version") {
		t.Errorf("with CUDA: %v", err)
	}
}
