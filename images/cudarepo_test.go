package images

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/builder/gpu"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/nvidiarepo"
)

// TestE2ECUDARepoMirror runs the production plan's cuda-repo path for real:
// `packer build testdata/cuda-repo-mirror.pkr.hcl`, a Debian 12 minbase
// from this machine's mirror with the gpuhost-gpu provisioner pointed
// (repositories {}) at a stand-in of NVIDIA's CUDA and libnvidia-container
// repositories served on 127.0.0.1 and signed with throwaway keys. The
// repositories publish newer versions of every pin. The bake must verify
// cuda-keyring's digest, add both sources signed-by their own keys, pin
// the driver through nvidia-driver-pinning, pin the CUDA release whole
// (every component the toolkit's meta packages reach, at the release's
// build, while the repository has the next release's), install and hold
// exactly the pins, build the module with DKMS for the target kernel,
// verify the payloads and write the manifest. Then a bake that must fail
// naming the library: a pinning package apt ignores (every meta package at
// its pin, the library under it newer), which only the payload check sees.
// This bake is Debian's with NVIDIA's debian12 repository, and the only
// one that installs the fabric manager; a wrong keyring digest, a pin the
// repository lacks and the lock's bakes are TestE2EUbuntuStandInBake's,
// on jammy's production template. The later bake takes the tree from the
// first one's bootstrap cache.
func TestE2ECUDARepoMirror(t *testing.T) {
	if os.Getenv("GPUHOST_E2E") != "1" {
		t.Skip("end-to-end bake of the cuda-repo path: set GPUHOST_E2E=1 (make e2e); needs root and the Debian mirror")
	}
	t.Parallel()
	testutil.Root(t)
	for _, tool := range [][2]string{{"mmdebstrap", "mmdebstrap"}, {"dpkg-deb", "dpkg"}, {"gpg", "gpg"}, {"gpgconf", "gpgconf"}, {"cc", "gcc"}} {
		testutil.Tool(t, tool[0], tool[1])
	}
	packer := mustAbs(t, envOr("GPUHOST_PACKER", "../bin/packer"))
	plugin := mustAbs(t, envOr("GPUHOST_PLUGIN", "../bin/packer-plugin-gpuhost"))
	// An apt cache of its own beside the Debian bake's: the two bake at
	// the same time, and apt locks the archives directory it is given.
	cache := envOr("GPUHOST_E2E_APT_CACHE", filepath.Join(os.TempDir(), "gpuhost-e2e-apt-cache")) + "-cuda-repo"
	// Beside the apt cache, as the Debian template keeps its own: the
	// first bake of a run (or of the last run) bootstraps, later ones
	// extract.
	bootCache := cache + "-bootstrap"

	// repoVars point the template at a stand-in and pin its keys.
	repoVars := func(l *nvidiarepo.Layout, base string) map[string]string {
		return map[string]string{
			"cuda_repositories":   base + "/" + l.CUDARepos,
			"toolkit_repository":  base + "/" + l.Toolkit,
			"toolkit_key":         base + "/" + l.ToolkitKey,
			"cuda_keyring_sha256": l.KeyringSHA256,
			"toolkit_key_sha256":  l.ToolkitKeySHA256,
		}
	}
	repo, base := nvidiarepo.Start(t, nvidiarepo.Options{Official: gpu.DefaultCUDARepositories})

	pluginPath := t.TempDir()
	env := append(os.Environ(), "PACKER_PLUGIN_PATH="+pluginPath, "CHECKPOINT_DISABLE=1", "PACKER_NO_COLOR=1")
	if out, err := packerCmd(env, niceSide, packer, "plugins", "install", "--path", plugin, "github.com/gpuhost/gpuhost").CombinedOutput(); err != nil {
		t.Fatalf("packer plugins install: %v\n%s", err, out)
	}

	const kernel = "6.1.0-50-amd64"
	driver := nvidiarepo.DriverVersions["535"][0]
	cuda := nvidiarepo.CUDAVersions["12.2"][0]
	toolkit := nvidiarepo.ToolkitVersions[1]
	vars := repoVars(repo, base)
	maps.Copy(vars, map[string]string{
		"apt_cache_dir":             cache,
		"bootstrap_cache_dir":       bootCache,
		"driver_version":            driver,
		"cuda_version":              cuda,
		"container_toolkit_version": toolkit,
		"target_kernel":             kernel,
		"lock_file":                 "",
	})
	// One module signing key for every bake, as a template that wants
	// reproducible images gives it.
	dkmsCert, dkmsKey, _ := testutil.WriteCert(t, t.TempDir(), testutil.CertSpec{Key: "rsa2048"})
	vars["dkms_signing_key"], vars["dkms_signing_certificate"] = dkmsKey, dkmsCert
	bake := func(name string, change map[string]string) (string, string, error) {
		t.Helper()
		out := filepath.Join(t.TempDir(), name)
		args := []string{"build", "-force", "-var", "output_dir=" + out}
		for k, v := range vars {
			if c, ok := change[k]; ok {
				v = c
			}
			args = append(args, "-var", k+"="+v)
		}
		start := time.Now()
		b, err := packerCmd(env, niceSide, packer, append(args, "testdata/cuda-repo-mirror.pkr.hcl")...).CombinedOutput()
		t.Logf("bake %s took %s", name, time.Since(start).Round(time.Second))
		return filepath.Join(out, "rootfs"), string(b), err
	}

	t.Run("installs and holds the pins", func(t *testing.T) {
		tree, log, err := bake("pinned", nil)
		if err != nil {
			t.Fatalf("packer build: %v\n%s", err, log)
		}
		checkCUDARepoImage(t, tree, log, base, repo, kernel, driver, cuda, toolkit)
		// The module was signed with the configured key, which the image
		// does not keep; its certificate stays for enrolment.
		if _, err := os.Lstat(filepath.Join(tree, "var/lib/dkms/mok.key")); err == nil {
			t.Error("the image carries DKMS's signing key")
		}
		if got, err := os.ReadFile(filepath.Join(tree, "var/lib/dkms/mok.pub")); err != nil || !bytes.Equal(got, mustRead(t, dkmsCert)) {
			t.Errorf("/var/lib/dkms/mok.pub is not the configured certificate (%v)", err)
		}
	})

	t.Run("a payload not at the pin fails though every meta package is", func(t *testing.T) {
		// A pinning package apt ignores: the meta packages are installed
		// at their pins, but their components (the library, the module
		// source) at the newer build the repository also has. Only the
		// payload check can see it.
		broken, brokenBase := nvidiarepo.Start(t, nvidiarepo.Options{Official: gpu.DefaultCUDARepositories, IgnoredPinning: true})
		_, log, err := bake("ignored-pinning", repoVars(broken, brokenBase))
		newer := strings.TrimSuffix(nvidiarepo.DriverVersions["535"][1], "-1")
		want := fmt.Sprintf("libnvidia-ml.so.1 is libnvidia-ml.so.%s, want libnvidia-ml.so.%s", newer, strings.TrimSuffix(driver, "-1"))
		if err == nil || !strings.Contains(log, want) {
			t.Fatalf("err %v; want the build to fail with\n%s\nin:\n%s", err, want, log)
		}
		for _, w := range []string{"==> gpuhost-gpu step: verify pins", "gpuhost-gpu failed in step: verify payload"} {
			if !strings.Contains(log, w) {
				t.Errorf("missing %q in:\n%s", w, log)
			}
		}
	})
}

// checkCUDARepoImage reads the baked tree: sources, keyring, preferences,
// the packages dpkg has and holds, the payloads and the manifest.
func checkCUDARepoImage(t *testing.T, tree, log, base string, repo *nvidiarepo.Layout, kernel, driver, cuda, toolkit string) {
	t.Helper()
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(tree, p))
		if err != nil {
			t.Errorf("the image's %s: %v", p, err)
		}
		return string(b)
	}
	if !strings.Contains(log, "gpuhost-gpu: all pins installed and held, payload at the pinned versions") {
		t.Errorf("the plan did not finish its checks:\n%s", log)
	}
	for _, step := range []string{"cuda repository", "container toolkit repository", "pins available", "dkms", "verify payload"} {
		if !strings.Contains(log, "==> gpuhost-gpu step: "+step) {
			t.Errorf("the plan did not run step %q", step)
		}
	}
	// Both sources, each trusting its own key; cuda-keyring's own list,
	// which names NVIDIA's server, is replaced by the configured one.
	cudaList := fmt.Sprintf("etc/apt/sources.list.d/cuda-%s-%s.list", nvidiarepo.CUDADistro, nvidiarepo.CUDAArch)
	if got, want := read(cudaList), fmt.Sprintf("deb [signed-by=%s] %s/%s/%s/%s/ /\n", gpu.CUDAKeyring, base, repo.CUDARepos, nvidiarepo.CUDADistro, nvidiarepo.CUDAArch); got != want {
		t.Errorf("%s is %q, want %q", cudaList, got, want)
	}
	if got, want := read("etc/apt/sources.list.d/nvidia-container-toolkit.list"), fmt.Sprintf("deb [signed-by=%s] %s/%s/$(ARCH) /\n", gpu.ToolkitKeyring, base, repo.Toolkit); got != want {
		t.Errorf("the toolkit's source is %q, want %q", got, want)
	}
	if read(strings.TrimPrefix(gpu.CUDAKeyring, "/")) != string(repo.CUDAKey) {
		t.Errorf("%s is not the CUDA repository's key", gpu.CUDAKeyring)
	}
	u := strings.TrimSuffix(driver, "-1")
	if pref := read(strings.TrimPrefix(nvidiarepo.PinningPreferences(u), "/")); !strings.Contains(pref, "Pin: version "+u+"-*") {
		t.Errorf("nvidia-driver-pinning-%s's preferences do not pin %s:\n%s", u, u, pref)
	}

	// dpkg's view: every pin at its version and held, the components the
	// meta packages pull in at the driver's version although the
	// repository has a newer build of each.
	status := dpkgStatus(t, filepath.Join(tree, "var/lib/dpkg/status"))
	held := map[string]string{
		"nvidia-driver-535-open":        driver,
		"nvidia-fabricmanager-535":      driver,
		"cuda-toolkit-12-2":             cuda,
		"nvidia-driver-pinning-" + u:    driver,
		"nvidia-container-toolkit":      toolkit,
		"nvidia-container-toolkit-base": toolkit,
		"libnvidia-container-tools":     toolkit,
		"libnvidia-container1":          toolkit,
	}
	// The CUDA release whole: every package the toolkit's meta packages
	// reach at the pinned release's build, held, though the repository
	// has the next release's builds, which satisfy the same dependencies.
	comp := nvidiarepo.CUDAComponents[cuda]
	release := strings.Join(strings.SplitN(cuda, ".", 3)[:2], "-")
	cudaSet := map[string]string{
		"cuda-compiler-" + release:                                                 cuda,
		"cuda-libraries-" + release:                                                cuda,
		"cuda-toolkit-" + release + "-config-common":                               comp["cuda-cudart"],
		"cuda-toolkit-" + release[:strings.Index(release, "-")] + "-config-common": comp["cuda-cudart"],
		"cuda-toolkit-config-common":                                               comp["cuda-cudart"],
	}
	for c, v := range comp {
		cudaSet[c+"-"+release] = v
	}
	maps.Copy(held, cudaSet)
	for name, want := range held {
		p, ok := status[name]
		switch {
		case !ok:
			t.Errorf("%s is not installed", name)
		case want != "" && p.version != want:
			t.Errorf("%s is %s, want %s", name, p.version, want)
		case p.want != "hold":
			t.Errorf("%s is not held (%s)", name, p.want)
		}
	}
	if _, ok := status["linux-headers-"+kernel]; !ok {
		t.Errorf("linux-headers-%s, which DKMS builds against, is not installed", kernel)
	}
	for _, name := range []string{"nvidia-dkms-535-open", "libnvidia-compute-535", "nvidia-utils-535", "nvidia-compute-utils-535"} {
		if p := status[name]; p.version != driver {
			t.Errorf("%s is %q, want %s (the repository's newer %s must not win)", name, p.version, driver, nvidiarepo.DriverVersions["535"][1])
		}
	}

	pref := read(strings.TrimPrefix(gpu.CUDAPreferences, "/"))
	for name, v := range cudaSet {
		if !strings.Contains(pref, "Package: "+name+"\nPin: version "+v+"\nPin-Priority: 1001\n") {
			t.Errorf("%s does not pin %s at %s:\n%s", gpu.CUDAPreferences, name, v, pref)
		}
		if !strings.Contains(log, "gpuhost-gpu: cuda set: "+name+" "+v) {
			t.Errorf("the plan's log does not list %s %s in the CUDA set", name, v)
		}
	}

	// The payloads, read here rather than trusted from the plan's log.
	home := "usr/local/cuda-" + strings.ReplaceAll(release, "-", ".")
	for _, lib := range []string{"libcudart.so." + strings.TrimSuffix(comp["cuda-cudart"], "-1"), "libcublas.so." + strings.TrimSuffix(comp["libcublas"], "-1")} {
		if _, err := os.Stat(filepath.Join(tree, home, "targets/x86_64-linux/lib", lib)); err != nil {
			t.Errorf("the release's %s: %v", lib, err)
		}
	}
	if nvcc := read(home + "/bin/nvcc"); !strings.Contains(nvcc, ", V"+strings.TrimSuffix(comp["cuda-nvcc"], "-1")+"'") {
		t.Errorf("%s/bin/nvcc is not cuda-nvcc %s's:\n%s", home, comp["cuda-nvcc"], nvcc)
	}
	mod := filepath.Join(tree, "lib/modules", kernel, "updates/dkms/nvidia.ko")
	if got, err := moduleVersion(mod); err != nil || got != u {
		t.Errorf("%s: version %q (%v), want %s", mod, got, err, u)
	}
	if real, err := filepath.EvalSymlinks(filepath.Join(tree, "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")); err != nil || filepath.Base(real) != "libnvidia-ml.so."+u {
		t.Errorf("libnvidia-ml.so.1 resolves to %q (%v), want libnvidia-ml.so.%s", real, err, u)
	}
	if ctr := read("etc/containerd/conf.d/99-zz-gpuhost.toml"); !strings.Contains(ctr, `default_runtime_name = "nvidia"`) || !strings.Contains(ctr, `BinaryName = "/usr/bin/nvidia-container-runtime"`) {
		t.Errorf("containerd does not default to the nvidia runtime:\n%s", ctr)
	}

	var m struct {
		Schema   string `json:"schema"`
		Packages []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			Held    bool   `json:"held"`
		} `json:"packages"`
		ConfigFiles []struct {
			Path string `json:"path"`
		} `json:"config_files"`
	}
	if err := json.Unmarshal([]byte(read("etc/gpuhost/manifest.json")), &m); err != nil {
		t.Fatalf("the manifest: %v", err)
	}
	if m.Schema != "gpuhost.manifest/v1" {
		t.Errorf("manifest schema %q", m.Schema)
	}
	inventory := map[string]bool{}
	for _, p := range m.Packages {
		if want, ok := held[p.Name]; ok && (want == "" || p.Version == want) && p.Held {
			inventory[p.Name] = true
		}
	}
	for name := range held {
		if !inventory[name] {
			t.Errorf("the manifest does not list %s held at its pin", name)
		}
	}
	paths := map[string]bool{}
	for _, f := range m.ConfigFiles {
		paths[f.Path] = true
	}
	for _, p := range []string{"/" + cudaList, "/etc/apt/sources.list.d/nvidia-container-toolkit.list", gpu.CUDAKeyring, gpu.ToolkitKeyring} {
		if !paths[p] {
			t.Errorf("the manifest has no digest of %s", p)
		}
	}
}

// moduleVersion reads a kernel module's version= from its .modinfo
// section, as modinfo -F version does.
func moduleVersion(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return "", fmt.Errorf("%s has no .modinfo section", path)
	}
	b, err := sec.Data()
	if err != nil {
		return "", err
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, "version="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s carries no version", path)
}

type dpkgPkg struct{ version, want string }

var stanzaField = regexp.MustCompile(`(?m)^(Package|Version|Status): (.*)$`)

// dpkgStatus reads the name, version and selection (install, hold) of
// every installed package in a dpkg status file.
func dpkgStatus(t *testing.T, path string) map[string]dpkgPkg {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]dpkgPkg{}
	for _, stanza := range strings.Split(string(b), "\n\n") {
		var name string
		var p dpkgPkg
		installed := false
		for _, m := range stanzaField.FindAllStringSubmatch(stanza, -1) {
			switch m[1] {
			case "Package":
				name = m[2]
			case "Version":
				p.version = m[2]
			case "Status":
				f := strings.Fields(m[2])
				p.want = f[0]
				installed = len(f) == 3 && f[2] == "installed"
			}
		}
		if name != "" && installed {
			out[name] = p
		}
	}
	return out
}

// The bakes share two cores with the Debian image's bake and with guests
// whose systemd waits (a device, the network) run on the wall clock, so
// every bake runs niced: it takes the CPU a guest leaves, and a starved
// guest no longer fails a wait that a quiet machine meets. Among the bakes,
// those on the run's longest chain (jammy's pinned bake, then its locked
// ones) come first: the others finish well before that chain does.
const (
	niceChain = 10
	niceSide  = 15
)

func packerCmd(env []string, nice int, packer string, args ...string) *exec.Cmd {
	if path, err := exec.LookPath("nice"); err == nil {
		args = append([]string{"-n", strconv.Itoa(nice), packer}, args...)
		packer = path
	}
	cmd := exec.Command(packer, args...)
	cmd.Env = env
	return cmd
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
