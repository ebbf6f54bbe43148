package gpu

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/nvidiarepo"
)

var update = flag.Bool("update", false, "rewrite golden files")

// planCases are the golden plans: testdata/cases/<name>.json renders to
// testdata/golden/plan-<name>.sh.
var planCases = []string{
	"ubuntu-22.04-cuda-repo-open-580",
	// The amazon-ebs template's: a live build instance.
	"ubuntu-22.04-cuda-repo-open-580-live",
	"ubuntu-24.04-cuda-repo-proprietary-550",
	"ubuntu-22.04-ubuntu-archive-535",
	// Canonical's driver and precompiled modules, CUDA from NVIDIA's
	// repository.
	"ubuntu-24.04-ubuntu-archive-open-580-cuda",
	"debian-12-debian-535",
	"debian-12-cuda-repo-open-535",
	"debian-12-cuda-repo-open-535-locked",
}

func loadCase(t *testing.T, name string) *Config {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "cases", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := DecodeJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return cfg
}

func renderCase(t *testing.T, name string) string {
	t.Helper()
	plan, err := RenderPlan(*loadCase(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return plan
}

func TestPlanGolden(t *testing.T) {
	for _, name := range planCases {
		t.Run(name, func(t *testing.T) {
			got := renderCase(t, name)
			golden := filepath.Join("testdata", "golden", "plan-"+name+".sh")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if got != string(want) {
				t.Errorf("plan differs from %s; run go test ./builder/gpu -update and review the diff", golden)
			}
			// The same configuration renders the same bytes.
			if again := renderCase(t, name); again != got {
				t.Error("RenderPlan is not deterministic")
			}
		})
	}
}

func TestPlanGoldenSyntax(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, name := range planCases {
		golden := filepath.Join("testdata", "golden", "plan-"+name+".sh")
		out, err := exec.Command(sh, "-n", golden).CombinedOutput()
		if err != nil {
			t.Errorf("sh -n %s: %v\n%s", golden, err, out)
		}
	}
}

func lines(plan string) []string { return strings.Split(plan, "\n") }

func hasLine(plan, line string) bool {
	for _, l := range lines(plan) {
		if l == line {
			return true
		}
	}
	return false
}

func TestPlanUbuntu2204HoldsDriverAndAllToolkitPackages(t *testing.T) {
	plan := renderCase(t, "ubuntu-22.04-cuda-repo-open-580")
	var hold string
	for _, l := range lines(plan) {
		if strings.HasPrefix(l, "apt-mark hold ") {
			hold = l
			break
		}
	}
	if hold == "" {
		t.Fatal("no apt-mark hold line")
	}
	for _, pkg := range append([]string{"nvidia-driver-580-open", "nvidia-driver-pinning-580.95.05", "cuda-toolkit-12-8", "linux-image-5.15.0-153-generic"}, ToolkitPackages...) {
		if !strings.Contains(hold, " '"+pkg+"'") {
			t.Errorf("apt-mark hold does not hold %s: %s", pkg, hold)
		}
	}
	for _, pkg := range ToolkitPackages {
		if !strings.Contains(plan, "'"+pkg+"=1.17.8-1'") {
			t.Errorf("%s is not installed at the pinned version", pkg)
		}
		if !hasLine(plan, "pin_check '"+pkg+"' '1.17.8-1'") {
			t.Errorf("%s is not verified", pkg)
		}
	}
	if !strings.Contains(plan, "'nvidia-driver-580-open=580.95.05-0ubuntu1'") {
		t.Error("driver not installed at its pinned version")
	}
}

func TestPlanOrderAndSafety(t *testing.T) {
	for _, name := range planCases {
		plan := renderCase(t, name)
		if !strings.Contains(plan, "\nset -eu\n") {
			t.Errorf("%s: no set -eu", name)
		}
		for _, l := range lines(plan) {
			if strings.Contains(l, "uname") && !strings.HasPrefix(strings.TrimSpace(l), "#") {
				t.Errorf("%s: the plan must never ask uname for the kernel: %s", name, l)
			}
		}
		if i, j := strings.Index(plan, "step \"hold\""), strings.Index(plan, "step \"verify pins\""); i < 0 || j < i {
			t.Errorf("%s: hold must come before verify", name)
		}
	}
	plan := renderCase(t, "ubuntu-22.04-cuda-repo-open-580")
	fetch := strings.Index(plan, "fetch \"https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/$cuda_arch/cuda-keyring_1.1-1_all.deb\"")
	install := strings.Index(plan, "dpkg -i \"$GPUHOST_WORK/cuda-keyring_1.1-1_all.deb\"")
	if fetch < 0 || install < fetch {
		t.Error("the keyring must be fetched (and its sha256 checked) before dpkg -i")
	}
	if !hasLine(plan, "dkms autoinstall -k '5.15.0-153-generic'") {
		t.Error("DKMS is not built for target_kernel")
	}
	if !strings.Contains(plan, "signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg") {
		t.Error("toolkit repository is not signed-by its keyring")
	}
	if !hasLine(plan, "nvidia-ctk runtime configure --runtime=containerd --set-as-default --cdi.enabled") {
		t.Error("nvidia-ctk is not run with --set-as-default --cdi.enabled")
	}
	if !hasLine(plan, "mask_unit unattended-upgrades.service apt-daily.timer apt-daily-upgrade.timer") {
		t.Error("unattended upgrades not masked")
	}
	if !strings.Contains(plan, "systemd.unified_cgroup_hierarchy=1") {
		t.Error("no cgroup v2 kernel argument")
	}

	p550 := renderCase(t, "ubuntu-24.04-cuda-repo-proprietary-550")
	if !strings.Contains(p550, "'cuda-drivers-550=550.163.01-0ubuntu1'") || !strings.Contains(p550, "/ubuntu2404/") {
		t.Error("550 proprietary plan does not install cuda-drivers-550 from ubuntu2404")
	}
	if strings.Contains(p550, "--set-as-default") {
		t.Error("runc default must not set nvidia as default")
	}

	arch := renderCase(t, "ubuntu-22.04-ubuntu-archive-535")
	for _, want := range []string{
		"'nvidia-headless-no-dkms-535-server=535.247.01-0ubuntu0.22.04.1'",
		"'nvidia-utils-535-server=535.247.01-0ubuntu0.22.04.1'",
		"'linux-modules-nvidia-535-server-5.15.0-153-generic'",
		"'nvidia-fabricmanager-535=535.247.01-0ubuntu0.22.04.1'",
	} {
		if !strings.Contains(arch, want) {
			t.Errorf("ubuntu-archive plan lacks %s", want)
		}
	}
	if strings.Contains(arch, "dkms autoinstall") || strings.Contains(arch, "cuda-keyring") {
		t.Error("ubuntu-archive plan must not use DKMS or the CUDA repository")
	}

	// With CUDA, the toolkit comes from NVIDIA's repository, the driver
	// still from the archive: no DKMS, no kernel headers, no NVIDIA driver
	// package.
	archCUDA := renderCase(t, "ubuntu-24.04-ubuntu-archive-open-580-cuda")
	for _, want := range []string{
		"'nvidia-headless-no-dkms-580-server-open=580.95.05-0ubuntu0.24.04.2'",
		"'linux-modules-nvidia-580-server-open-6.8.0-87-generic'",
		"cuda-keyring_1.1-1_all.deb",
		"/ubuntu2404/",
		"cuda_set 'cuda-toolkit-13-0' '13.0.1-1'",
	} {
		if !strings.Contains(archCUDA, want) {
			t.Errorf("ubuntu-archive plan with CUDA lacks %s", want)
		}
	}
	for _, unwanted := range []string{"dkms autoinstall", "step \"install kernel headers\"", "cuda-drivers", "nvidia-driver-pinning"} {
		if strings.Contains(archCUDA, unwanted) {
			t.Errorf("ubuntu-archive plan with CUDA has %s", unwanted)
		}
	}

	deb := renderCase(t, "debian-12-debian-535")
	for _, want := range []string{
		"apt_install 'libnvidia-ml1=535.261.03-1' 'nvidia-smi=535.261.03-1' 'nvidia-persistenced=535.171.04-1~deb12u1'",
		"pin_check 'nvidia-smi' '535.261.03-1'",
		"enable_unit 'nvidia-persistenced.service'",
		"apt_install 'containerd'",
	} {
		if !hasLine(deb, want) {
			t.Errorf("debian plan lacks line %q", want)
		}
	}
	// The audit rules watch /usr/bin/nvidia-ctk whether or not it is
	// installed; the plan never runs it.
	for _, bad := range []string{"nvidia.github.io", "nvidia-ctk runtime", "nvidia-ctk cdi", "dkms", "cuda-keyring", "curl"} {
		if strings.Contains(deb, bad) {
			t.Errorf("debian plan without a toolkit mentions %s", bad)
		}
	}
	if !strings.Contains(deb, "non-free-firmware") {
		t.Error("debian plan does not enable non-free-firmware")
	}
}

func TestPlanNeedsDistroAndKernel(t *testing.T) {
	cfg := loadCase(t, "ubuntu-22.04-cuda-repo-open-580")
	c := *cfg
	c.Distro = Distro{}
	if _, err := RenderPlan(c); err == nil || !strings.Contains(err.Error(), "distro.id") {
		t.Errorf("no distro: err = %v", err)
	}
	c = *cfg
	c.TargetKernel = ""
	if _, err := RenderPlan(c); err == nil || !strings.Contains(err.Error(), "target_kernel") {
		t.Errorf("no kernel: err = %v", err)
	}
}

func TestPlanNeverCarriesSecrets(t *testing.T) {
	t.Setenv("NGC_API_KEY", "nvapi-supersecret")
	t.Setenv("NGC_CLI_API_KEY", "nvapi-supersecret")
	for _, name := range planCases {
		if strings.Contains(renderCase(t, name), "supersecret") {
			t.Errorf("%s: the plan carries an environment secret", name)
		}
	}
}

func TestPlanBranch590UsesUnsuffixedNames(t *testing.T) {
	cfg := loadCase(t, "ubuntu-22.04-cuda-repo-open-580")
	cfg.Driver.Version = "590.44.01-1"
	cfg.Driver.Branch = "590"
	plan, err := RenderPlan(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "'nvidia-open=590.44.01-1'") || !strings.Contains(plan, "'nvidia-fabricmanager=590.44.01-1'") {
		t.Error("branch 590 must use nvidia-open and nvidia-fabricmanager")
	}
	if !strings.Contains(plan, "'nvidia-driver-pinning-590.44.01'") {
		t.Error("branch 590 must install the pinning package")
	}
}

// TestPlanPinsWholeDriverSource: with an archive that carries a newer build
// of the driver (Debian's bookworm-security does), pinning only the named
// packages fails on their exact-version dependencies; the plan pins the whole
// source package through apt preferences, before apt update.
func TestPlanPinsWholeDriverSource(t *testing.T) {
	deb := renderCase(t, "debian-12-debian-535")
	pref := strings.Index(deb, "Package: src:nvidia-graphics-drivers\nPin: version 535.261.03-1\nPin-Priority: 1001\n")
	if pref < 0 || !strings.Contains(deb, "Package: src:nvidia-persistenced\nPin: version 535.171.04-1~deb12u1\n") {
		t.Fatal("debian plan does not pin the driver's source packages")
	}
	if update := strings.Index(deb, "apt-get update"); update < pref {
		t.Error("preferences must be written before apt update")
	}
	arch := renderCase(t, "ubuntu-22.04-ubuntu-archive-535")
	if !strings.Contains(arch, "Package: src:nvidia-graphics-drivers-535-server\nPin: version 535.247.01-0ubuntu0.22.04.1\n") {
		t.Error("ubuntu-archive plan does not pin its driver source package")
	}
	if strings.Contains(renderCase(t, "ubuntu-22.04-cuda-repo-open-580"), "Package: src:") {
		t.Error("cuda-repo pins the driver through nvidia-driver-pinning, not its own preferences")
	}
}

// TestPlanCDIUnit: with containerd.cdi the plan installs a unit that
// generates the CDI spec at every boot, before containerd, and the unit is
// one systemd accepts.
func TestPlanCDIUnit(t *testing.T) {
	plan := renderCase(t, "ubuntu-22.04-cuda-repo-open-580")
	if !hasLine(plan, "enable_unit gpuhost-cdi.service") {
		t.Fatal("the CDI unit is not enabled")
	}
	_, rest, ok := strings.Cut(plan, "cat >/etc/systemd/system/gpuhost-cdi.service <<UNIT\n")
	unit, _, ok2 := strings.Cut(rest, "\nUNIT\n")
	if !ok || !ok2 {
		t.Fatal("no unit text in the plan")
	}
	for _, want := range []string{"Before=containerd.service", "Type=oneshot", "ExecStart=$nvidia_ctk cdi generate --output=/var/run/cdi/nvidia.yaml", "WantedBy=multi-user.target"} {
		if !hasLine(unit, want) {
			t.Errorf("the unit lacks %q:\n%s", want, unit)
		}
	}
	// The plan fills in nvidia-ctk's path on the target; any executable
	// stands in for it here.
	analyze := testutil.Tool(t, "systemd-analyze", "systemd")
	stand, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gpuhost-cdi.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(unit, "$nvidia_ctk", stand)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", path).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestPlanCUDARepoFollowsRepositories: the CUDA source and the toolkit's
// come from repositories, each signed-by its own key, and the keyring the
// plan trusts is fetched from the same place.
func TestPlanCUDARepoFollowsRepositories(t *testing.T) {
	plan := renderCase(t, "debian-12-cuda-repo-open-535")
	for _, want := range []string{
		`fetch "http://127.0.0.1:8080/compute/cuda/repos/debian12/$cuda_arch/cuda-keyring_1.1-1_all.deb" "$GPUHOST_WORK/cuda-keyring_1.1-1_all.deb" '` + strings.Repeat("2", 64) + `'`,
		`echo "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] http://127.0.0.1:8080/compute/cuda/repos/debian12/$cuda_arch/ /" >"/etc/apt/sources.list.d/cuda-debian12-$cuda_arch.list"`,
		`fetch 'http://127.0.0.1:8080/libnvidia-container/gpgkey' "$GPUHOST_WORK/nvidia-container-toolkit.key" '` + strings.Repeat("3", 64) + `'`,
		`echo 'deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] http://127.0.0.1:8080/libnvidia-container/stable/deb/$(ARCH) /' >/etc/apt/sources.list.d/nvidia-container-toolkit.list`,
	} {
		if !hasLine(plan, want) {
			t.Errorf("the plan has no line\n%s", want)
		}
	}
}

// TestPlanChecksPinsAreAvailableBeforeInstalling: every package the
// install steps name is looked up first, versioned pins before names, so
// a missing driver version is reported on the meta package with the
// versions the repository has.
func TestPlanChecksPinsAreAvailableBeforeInstalling(t *testing.T) {
	plan := renderCase(t, "debian-12-cuda-repo-open-535")
	check := strings.Index(plan, `step "pins available"`)
	install := strings.Index(plan, `step "install kernel headers"`)
	if check < 0 || install < check {
		t.Fatalf("the availability check (at %d) does not come before the first install (at %d)", check, install)
	}
	var got []string
	for _, l := range lines(plan[check:install]) {
		if strings.HasPrefix(l, "available ") {
			got = append(got, l)
		}
	}
	want := []string{
		"available 'nvidia-driver-535-open' '535.261.03-1' || missing=1",
		"available 'nvidia-fabricmanager-535' '535.261.03-1' || missing=1",
		"available 'cuda-toolkit-12-2' '12.2.0-1' || missing=1",
		"available 'nvidia-container-toolkit' '1.17.8-1' || missing=1",
		"available 'nvidia-container-toolkit-base' '1.17.8-1' || missing=1",
		"available 'libnvidia-container-tools' '1.17.8-1' || missing=1",
		"available 'libnvidia-container1' '1.17.8-1' || missing=1",
		"available 'linux-headers-6.1.0-50-amd64' '' || missing=1",
		"available 'nvidia-driver-pinning-535.261.03' '' || missing=1",
		"available 'containerd' '' || missing=1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("availability checks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPlanVerifiesPayloadVersions: past dpkg's versions, the plan checks
// the library NVML users load, the module built for the target kernel,
// the toolkit's binaries and nvcc; the debian source brings no module.
func TestPlanVerifiesPayloadVersions(t *testing.T) {
	plan := renderCase(t, "debian-12-cuda-repo-open-535")
	for _, want := range []string{
		`	[ "${real##*/}" = 'libnvidia-ml.so.535.261.03' ] || die "$lib is ${real##*/}, want libnvidia-ml.so.535.261.03"`,
		`mods=$(find '/lib/modules/6.1.0-50-amd64' -type f \( -name 'nvidia.ko' -o -name 'nvidia.ko.*' \))`,
		`	[ "$got" = '535.261.03' ] || die "$mod is version ${got:-unknown}, want 535.261.03"`,
		`[ "$got" = '1.17.8' ] || die "nvidia-ctk --version reports ${got:-no version}, want 1.17.8"`,
		`	[ "$got" = '1.17.8' ] || die "nvidia-container-cli --version reports $field ${got:-none}, want 1.17.8"`,
		`[ "$got" = '12.2' ] || die "/usr/local/cuda-12.2/bin/nvcc reports release ${got:-none}, want 12.2"`,
	} {
		if !hasLine(plan, want) {
			t.Errorf("the plan has no line\n%s", want)
		}
	}
	debian := renderCase(t, "debian-12-debian-535")
	if !strings.Contains(debian, "want libnvidia-ml.so.535.261.03") {
		t.Error("the debian plan does not check libnvidia-ml's version")
	}
	if strings.Contains(debian, "modinfo") || strings.Contains(debian, "nvidia-ctk --version") {
		t.Error("the debian plan checks a module or toolkit that source does not install")
	}
}

// aptState is a private apt (any user, its own state directory) over the
// stand-in's CUDA repository, trusted through its key; prefs is the
// preferences directory it reads. It returns the APT_CONFIG file for apt
// commands and the plan's functions.
func aptState(t *testing.T, repo *nvidiarepo.Layout, base, prefs string) string {
	t.Helper()
	state := t.TempDir()
	key := filepath.Join(state, "cuda.gpg")
	if err := os.WriteFile(key, repo.CUDAKey, 0o644); err != nil {
		t.Fatal(err)
	}
	list := "deb [signed-by=" + key + "] " + base + "/" + repo.CUDARepos + "/" + nvidiarepo.CUDADistro + "/" + nvidiarepo.CUDAArch + "/ /\n"
	for _, d := range []string{"lists/partial", "cache/archives/partial", "none"} {
		if err := os.MkdirAll(filepath.Join(state, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	user := "root"
	if os.Geteuid() != 0 {
		user = os.Getenv("USER")
	}
	// Installed: what a Debian 12 image has that the toolkit needs from
	// the distribution.
	files := map[string]string{
		"sources.list": list,
		"status":       "Package: dkms\nStatus: install ok installed\nVersion: 3.0.10-8+deb12u1\nArchitecture: all\n\n",
		"apt.conf": `Dir::Etc::SourceList "` + filepath.Join(state, "sources.list") + `";
Dir::Etc::SourceParts "` + filepath.Join(state, "none") + `";
Dir::Etc::Preferences "` + filepath.Join(state, "none", "preferences") + `";
Dir::Etc::PreferencesParts "` + prefs + `";
Dir::State::Lists "` + filepath.Join(state, "lists") + `";
Dir::State::status "` + filepath.Join(state, "status") + `";
Dir::Cache "` + filepath.Join(state, "cache") + `";
APT::Architecture "amd64";
APT::Sandbox::User "` + user + `";
Debug::NoLocking "1";
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(state, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(state, "apt.conf")
	cmd := exec.Command("apt-get", "update")
	cmd.Env = append(os.Environ(), "APT_CONFIG="+conf)
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "W: ") {
		t.Fatalf("apt-get update: %v\n%s", err, out)
	}
	return conf
}

// TestPlanPinsWholeCUDARelease runs the plan's cuda set step against the
// stand-in of NVIDIA's CUDA repository with apt's own tools: every
// component the toolkit's meta packages reach is at the pinned release's
// build (cuda-nvcc-12-2 12.2.91-1 for 12.2.0, not 12.2.2's 12.2.140-1,
// which satisfies the same ">="), the shared configuration packages are
// in the set at the release's runtime build although later releases
// publish newer ones, what the distribution provides (dkms) is not; under the
// preferences the step writes, apt installs exactly the set, while without
// them it would take the newer builds. The plan installs, holds and checks
// the set it resolved.
func TestPlanPinsWholeCUDARelease(t *testing.T) {
	for _, tool := range [][2]string{{"dpkg-deb", "dpkg"}, {"gpg", "gpg"}, {"gpgconf", "gpgconf"}, {"cc", "gcc"}, {"apt-get", "apt"}} {
		testutil.Tool(t, tool[0], tool[1])
	}
	plan := renderCase(t, "debian-12-cuda-repo-open-535")
	step := testutil.PlanStep(t, plan, "cuda set")
	_, rest, ok := strings.Cut(plan, "\ncuda_set() {\n")
	fn, _, ok2 := strings.Cut(rest, "\n}\n")
	if !ok || !ok2 {
		t.Fatal("the plan defines no cuda_set")
	}
	for _, want := range []string{
		"apt_install $(awk '{ print $1 \"=\" $2 }' \"$GPUHOST_WORK/cuda-set\")",
		"apt-mark hold $(cut -d' ' -f1 \"$GPUHOST_WORK/cuda-set\")",
		"\tpin_check \"$name\" \"$version\"",
	} {
		if !hasLine(plan, want) {
			t.Errorf("the plan has no line %q", want)
		}
	}
	for _, s := range []string{`step "pins available"`, `step "cuda set"`, `step "install cuda toolkit"`, `step "hold"`, `step "verify pins"`} {
		if !strings.Contains(plan, s) {
			t.Fatalf("the plan has no %s", s)
		}
	}
	if strings.Index(plan, `step "cuda set"`) < strings.Index(plan, `step "pins available"`) || strings.Index(plan, `step "cuda set"`) > strings.Index(plan, `step "install kernel headers"`) {
		t.Error("the cuda set must be resolved after the pins are found available and before anything is installed")
	}

	repo, base := nvidiarepo.Start(t, nvidiarepo.Options{Official: DefaultCUDARepositories})
	prefs := t.TempDir()
	conf := aptState(t, repo, base, prefs)
	work := t.TempDir()
	pref := filepath.Join(prefs, "gpuhost-cuda.pref")
	script := "set -eu\ndie() { echo \"die: $*\" >&2; exit 1; }\nGPUHOST_WORK=$1\ncuda_set() {\n" + fn + "\n}\n" +
		strings.ReplaceAll(step, CUDAPreferences, pref)
	cmd := exec.Command("sh", "-c", script, "sh", work)
	cmd.Env = append(os.Environ(), "APT_CONFIG="+conf)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the cuda set step: %v\n%s", err, out)
	}
	set, err := os.ReadFile(filepath.Join(work, "cuda-set"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(set)), "\n") {
		name, version, _ := strings.Cut(l, " ")
		got[name] = version
	}
	comp := nvidiarepo.CUDAComponents["12.2.0-1"]
	want := map[string]string{
		"cuda-toolkit-12-2":               "12.2.0-1",
		"cuda-compiler-12-2":              "12.2.0-1",
		"cuda-libraries-12-2":             "12.2.0-1",
		"cuda-nvcc-12-2":                  comp["cuda-nvcc"],
		"cuda-cudart-12-2":                comp["cuda-cudart"],
		"libcublas-12-2":                  comp["libcublas"],
		"cuda-toolkit-12-2-config-common": comp["cuda-cudart"],
		"cuda-toolkit-12-config-common":   comp["cuda-cudart"],
		"cuda-toolkit-config-common":      comp["cuda-cudart"],
	}
	if !maps.Equal(got, want) {
		t.Errorf("cuda set:\n%s\nwant %v", set, want)
	}
	if !strings.Contains(string(out), "gpuhost-gpu: cuda set: cuda-nvcc-12-2 "+comp["cuda-nvcc"]+"\n") {
		t.Errorf("the step does not log the set:\n%s", out)
	}

	// apt itself, under the step's preferences: the meta package alone
	// brings the set at its builds; without them, the newer builds.
	install := func(args ...string) map[string]string {
		t.Helper()
		cmd := exec.Command("apt-get", append([]string{"install", "-s", "--no-install-recommends"}, args...)...)
		cmd.Env = append(os.Environ(), "APT_CONFIG="+conf)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("apt-get install -s %v: %v\n%s", args, err, out)
		}
		inst := map[string]string{}
		for _, m := range regexp.MustCompile(`(?m)^Inst (\S+) \((\S+) `).FindAllStringSubmatch(string(out), -1) {
			inst[m[1]] = m[2]
		}
		return inst
	}
	if inst := install("cuda-toolkit-12-2=12.2.0-1"); !maps.Equal(inst, want) {
		t.Errorf("under %s apt installs %v; want %v", pref, inst, want)
	}
	if err := os.Remove(pref); err != nil {
		t.Fatal(err)
	}
	if inst := install("cuda-toolkit-12-2=12.2.0-1"); inst["cuda-nvcc-12-2"] != nvidiarepo.CUDAComponents["12.2.2-1"]["cuda-nvcc"] {
		t.Errorf("without the preferences apt installs cuda-nvcc-12-2 %s; the stand-in no longer shows why the set is needed", inst["cuda-nvcc-12-2"])
	}

	// The release's own compiler withdrawn, the next release's still
	// there: the set refuses to take it, naming both.
	own, later := comp["cuda-nvcc"], nvidiarepo.CUDAComponents["12.2.2-1"]["cuda-nvcc"]
	repo, base = nvidiarepo.Start(t, nvidiarepo.Options{Official: DefaultCUDARepositories, Withdrawn: []string{"cuda-nvcc-12-2=" + own}})
	cmd = exec.Command("sh", "-c", script, "sh", t.TempDir())
	cmd.Env = append(os.Environ(), "APT_CONFIG="+aptState(t, repo, base, t.TempDir()))
	out, err = cmd.CombinedOutput()
	wantErr := fmt.Sprintf("die: cuda-nvcc-12-2 %s, the build of it that cuda-compiler-12-2 12.2.0-1 names, is not in the apt sources, which have cuda-nvcc-12-2 at: %s; a later build belongs to another CUDA release, which the pin keeps out", strings.TrimSuffix(own, "-1"), later)
	if err == nil || !strings.Contains(string(out), wantErr) {
		t.Errorf("the cuda set with %s withdrawn: %v, want it to fail with\n%s\n%s", own, err, wantErr, out)
	}
}

// The debian source builds no module, but a dkms key still leaves its
// certificate where the image's hosts enrol it from, and the key is staged
// only for the build: no DKMS step runs, and the exit removes the key.
func TestPlanDebianKeepsTheDKMSCertificate(t *testing.T) {
	c := loadCase(t, "debian-12-debian-535")
	c.DKMS = DKMS{SigningKey: filepath.Join("testdata", "dkms", "signing.key"), SigningCertificate: filepath.Join("testdata", "dkms", "signing.crt")}
	plan, err := RenderPlan(*c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"install -m 0644 '" + c.RemoteFolder + "/gpuhost-gpu-mok.pub' /var/lib/dkms/mok.pub", "rm -f '" + c.RemoteFolder + "/gpuhost-gpu-mok.key' /var/lib/dkms/mok.key"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan lacks %q", want)
		}
	}
	if strings.Contains(plan, "dkms autoinstall") {
		t.Error("the debian source's plan builds with DKMS")
	}
}
