package nvidiarepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

const official = "https://cuda.example/compute/cuda/repos"

// TestAptReadsTheRepositories builds both repositories, serves them, and
// has apt (as any user, in a state directory of its own) fetch and verify
// them against their keys, each source signed-by its own: it lists every
// published version, resolves the toolkit's four packages at a pin and
// refuses a source signed by the other repository's key.
func TestAptReadsTheRepositories(t *testing.T) {
	for _, tool := range [][2]string{{"dpkg-deb", "dpkg"}, {"gpg", "gpg"}, {"gpgconf", "gpgconf"}, {"cc", "gcc"}, {"apt-get", "apt"}} {
		testutil.Tool(t, tool[0], tool[1])
	}
	l, base := Start(t, Options{Official: official})

	state := t.TempDir()
	cudaKey := filepath.Join(state, "cuda.gpg")
	toolkitKey := filepath.Join(state, "toolkit.gpg")
	if err := os.WriteFile(cudaKey, l.CUDAKey, 0o644); err != nil {
		t.Fatal(err)
	}
	armored, err := os.ReadFile(filepath.Join(l.Root, l.ToolkitKey))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gpg", "--homedir", t.TempDir(), "--batch", "--yes", "--dearmor", "-o", toolkitKey, filepath.Join(l.Root, l.ToolkitKey)).CombinedOutput(); err != nil {
		t.Fatalf("dearmoring the toolkit key: %v\n%s", err, out)
	}
	if sha(armored) != l.ToolkitKeySHA256 {
		t.Error("ToolkitKeySHA256 is not the digest of the served key")
	}
	sources := func(cudaSignedBy string) string {
		return "deb [signed-by=" + cudaSignedBy + "] " + base + "/" + l.CUDARepos + "/" + CUDADistro + "/" + CUDAArch + "/ /\n" +
			"deb [signed-by=" + toolkitKey + "] " + base + "/" + l.Toolkit + "/amd64 /\n"
	}
	apt := func(list string, args ...string) (string, error) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(state, "sources.list"), []byte(list), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"lists/partial", "cache/archives/partial"} {
			if err := os.MkdirAll(filepath.Join(state, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(state, "status"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		opts := []string{
			"-o", "Dir::Etc::SourceList=" + filepath.Join(state, "sources.list"),
			"-o", "Dir::Etc::SourceParts=" + filepath.Join(state, "none"),
			"-o", "Dir::Etc::Preferences=" + filepath.Join(state, "none"),
			"-o", "Dir::Etc::PreferencesParts=" + filepath.Join(state, "none"),
			"-o", "Dir::State::Lists=" + filepath.Join(state, "lists"),
			"-o", "Dir::State::status=" + filepath.Join(state, "status"),
			"-o", "Dir::Cache=" + filepath.Join(state, "cache"),
			"-o", "APT::Architecture=amd64",
			"-o", "APT::Sandbox::User=" + currentUser(),
			"-o", "Debug::NoLocking=1",
		}
		name := "apt-get"
		if args[0] == "madison" || args[0] == "policy" {
			name = "apt-cache"
		}
		out, err := exec.Command(name, append(opts, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := apt(sources(cudaKey), "update"); err != nil || strings.Contains(out, "W: ") {
		t.Fatalf("apt-get update: %v\n%s", err, out)
	}
	out, err := apt(sources(cudaKey), "madison", "nvidia-driver-535-open", "nvidia-container-toolkit", "cuda-toolkit-12-2")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range append(append(append([]string{}, DriverVersions["535"]...), ToolkitVersions...), CUDAVersions["12.2"]...) {
		if !strings.Contains(out, " "+v+" ") {
			t.Errorf("apt-cache madison does not list %s:\n%s", v, out)
		}
	}
	out, err = apt(sources(cudaKey), "install", "-s", "--no-install-recommends", "nvidia-container-toolkit=1.17.8-1", "nvidia-container-toolkit-base=1.17.8-1", "libnvidia-container-tools=1.17.8-1", "libnvidia-container1=1.17.8-1")
	if err != nil {
		t.Fatalf("resolving the toolkit at 1.17.8-1: %v\n%s", err, out)
	}
	for _, p := range []string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"} {
		if !strings.Contains(out, "Inst "+p+" (1.17.8-1 ") {
			t.Errorf("%s is not installed at 1.17.8-1:\n%s", p, out)
		}
	}
	// The CUDA source signed-by the toolkit's key: apt must refuse it.
	if err := os.RemoveAll(filepath.Join(state, "lists")); err != nil {
		t.Fatal(err)
	}
	out, _ = apt(sources(toolkitKey), "update")
	if !strings.Contains(out, "NO_PUBKEY") && !strings.Contains(out, "is not signed") {
		t.Errorf("apt accepted the CUDA repository under the toolkit's key:\n%s", out)
	}
}

// TestPackagesCarryVersionedPayloads reads the built packages: the
// library stubs are shared objects with the real sonames, the module
// source carries the driver's version, and the keyring names NVIDIA's
// server as the real package does.
func TestPackagesCarryVersionedPayloads(t *testing.T) {
	for _, tool := range [][2]string{{"dpkg-deb", "dpkg"}, {"gpg", "gpg"}, {"gpgconf", "gpgconf"}, {"cc", "gcc"}, {"readelf", "binutils"}} {
		testutil.Tool(t, tool[0], tool[1])
	}
	l, err := Build(filepath.Join(t.TempDir(), "repo"), Options{Official: official})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	cuda := filepath.Join(l.Root, l.CUDARepos, CUDADistro, CUDAArch)
	x := t.TempDir()
	extract := func(deb string) string {
		t.Helper()
		dir := filepath.Join(x, strings.TrimSuffix(deb, ".deb"))
		if out, err := exec.Command("dpkg-deb", "-x", filepath.Join(cuda, deb), dir).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", deb, err, out)
		}
		return dir
	}
	lib := filepath.Join(extract("libnvidia-compute-535_535.261.03-1_amd64.deb"), libDir, "libnvidia-ml.so.535.261.03")
	out, err := exec.Command("readelf", "-d", lib).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Library soname: [libnvidia-ml.so.1]") {
		t.Errorf("libnvidia-ml.so.535.261.03 has no soname libnvidia-ml.so.1: %v\n%s", err, out)
	}
	src, err := os.ReadFile(filepath.Join(extract("nvidia-dkms-535-open_535.261.03-1_amd64.deb"), "usr/src/nvidia-535.261.03/nvidia.c"))
	if err != nil || !strings.Contains(string(src), `MODULE_VERSION("535.261.03");`) {
		t.Errorf("the module source does not carry 535.261.03: %v\n%s", err, src)
	}
	list, err := os.ReadFile(filepath.Join(extract(KeyringDeb), "etc/apt/sources.list.d/cuda-debian12-x86_64.list"))
	if want := "deb [signed-by=" + Keyring + "] " + official + "/debian12/x86_64/ /\n"; err != nil || string(list) != want {
		t.Errorf("cuda-keyring's source list is %q (%v), want %q", list, err, want)
	}
	keyring, err := os.ReadFile(filepath.Join(cuda, KeyringDeb))
	if err != nil || sha(keyring) != l.KeyringSHA256 {
		t.Errorf("KeyringSHA256 is not the digest of %s (%v)", KeyringDeb, err)
	}
}

// TestUbuntuRepositories builds the ubuntu2204 and ubuntu2404 directories
// as NVIDIA lays them out: the driver at its Ubuntu revision (0ubuntu1),
// the keyring's source list naming the distro, and a Distro outside the
// three refused.
func TestUbuntuRepositories(t *testing.T) {
	for _, tool := range [][2]string{{"dpkg-deb", "dpkg"}, {"gpg", "gpg"}, {"gpgconf", "gpgconf"}, {"cc", "gcc"}} {
		testutil.Tool(t, tool[0], tool[1])
	}
	if _, err := Build(filepath.Join(t.TempDir(), "repo"), Options{Official: official, Distro: "ubuntu1804"}); err == nil || !strings.Contains(err.Error(), `"ubuntu1804"`) {
		t.Errorf("Distro ubuntu1804: %v, want an error naming it", err)
	}
	for _, distro := range []string{"ubuntu2204", "ubuntu2404"} {
		l, err := Build(filepath.Join(t.TempDir(), "repo"), Options{Official: official, Distro: distro})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		dir := filepath.Join(l.Root, l.CUDARepos, distro, CUDAArch)
		index, err := os.ReadFile(filepath.Join(dir, "Packages"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Package: nvidia-driver-580-open\nVersion: 580.95.05-0ubuntu1\n", "Package: nvidia-driver-580-open\nVersion: 580.105.08-0ubuntu1\n", "Package: cuda-toolkit-13-0\nVersion: 13.0.1-1\n"} {
			if !strings.Contains(string(index), want) {
				t.Errorf("%s's Packages has no %q", distro, want)
			}
		}
		if got := l.DriverVersions["535"]; len(got) != 2 || got[0] != "535.261.03-0ubuntu1" {
			t.Errorf("%s: DriverVersions[535] = %v", distro, got)
		}
		x := t.TempDir()
		if out, err := exec.Command("dpkg-deb", "-x", filepath.Join(dir, KeyringDeb), x).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", KeyringDeb, err, out)
		}
		list, err := os.ReadFile(filepath.Join(x, "etc/apt/sources.list.d/cuda-"+distro+"-x86_64.list"))
		if want := "deb [signed-by=" + Keyring + "] " + official + "/" + distro + "/x86_64/ /\n"; err != nil || string(list) != want {
			t.Errorf("%s: cuda-keyring's source list is %q (%v), want %q", distro, list, err, want)
		}
	}
}

func currentUser() string {
	if os.Geteuid() == 0 {
		return "root"
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "nobody"
}
