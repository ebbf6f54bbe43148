package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// maxExposure is the most `systemd-analyze security` may score the agent's
// services (0 is locked down, 10 is unprotected), and maxOtherExposure the
// most it may score any other service deploy/systemd ships.
const (
	maxExposure      = 3.0
	maxOtherExposure = 4.0
)

var services = []string{"gpuhost-agent.service", "gpuhost-agentd.service"}

// exposureBound is the most a shipped service may score.
func exposureBound(unit string) float64 {
	if slices.Contains(services, unit) {
		return maxExposure
	}
	return maxOtherExposure
}

// shippedServices lists the *.service files in deploy/systemd, and fails
// the test if the agent's are not among them.
func shippedServices(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("systemd", "*.service"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	for _, s := range services {
		if !slices.Contains(names, s) {
			t.Fatalf("%s is not in deploy/systemd (%v)", s, names)
		}
	}
	return names
}

// installRoot lays out a root as `make install` and the OS would: this
// machine's systemd units, ours in /etc/systemd/system, the lean agent the
// units start built at /usr/local/bin/gpuhost-agent, the scripts they run
// in /usr/local/lib/gpuhost, and the man pages they name. systemd-analyze then checks the units against it, not
// against a build machine that has no agent installed.
func installRoot(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the agent the units run; make test runs this")
	}
	root := t.TempDir()
	unitDir := filepath.Join(root, "etc", "systemd", "system")
	manDir := filepath.Join(root, "usr", "local", "share", "man", "man1")
	for _, d := range []string{unitDir, manDir, filepath.Join(root, "usr", "lib", "systemd")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Run(t, time.Minute, "cp", "-a", "/usr/lib/systemd/system", filepath.Join(root, "usr", "lib", "systemd"))
	units, _ := filepath.Glob(filepath.Join("systemd", "*"))
	pages, _ := filepath.Glob(filepath.Join("..", "docs", "man", "*.1"))
	if len(units) == 0 || len(pages) == 0 {
		t.Fatalf("units %v, man pages %v", units, pages)
	}
	for _, f := range units {
		copyFile(t, f, filepath.Join(unitDir, filepath.Base(f)))
	}
	for _, f := range pages {
		copyFile(t, f, filepath.Join(manDir, filepath.Base(f)))
	}
	// The scripts the units run, where make install puts them.
	scripts, _ := filepath.Glob(filepath.Join("scripts", "*"))
	libDir := filepath.Join(root, "usr", "local", "lib", "gpuhost")
	if err := os.MkdirAll(libDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range scripts {
		copyFile(t, f, filepath.Join(libDir, filepath.Base(f)))
		if err := os.Chmod(filepath.Join(libDir, filepath.Base(f)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Run(t, 10*time.Minute, "go", "build", "-trimpath", "-tags", "lean", "-o",
		filepath.Join(root, "usr", "local", "bin", "gpuhost-agent"), "../cmd/gpuhost")
	return root
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSystemdAnalyze runs systemd-analyze verify over every unit in
// deploy/systemd, man pages included (Documentation= must name pages that
// exist), and holds every service there to its bound by `systemd-analyze
// security`: the agent's to maxExposure, the others to maxOtherExposure.
func TestSystemdAnalyze(t *testing.T) {
	t.Parallel()
	sa := testutil.Tool(t, "systemd-analyze", "systemd")
	testutil.Tool(t, "man", "man-db")
	root := installRoot(t)
	units, _ := filepath.Glob(filepath.Join(root, "etc", "systemd", "system", "*"))
	cmd := exec.Command(sa, append([]string{"verify", "--root=" + root}, units...)...)
	cmd.Env = append(os.Environ(), "MANPATH="+filepath.Join(root, "usr", "local", "share", "man"))
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	overall := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)
	for _, unit := range shippedServices(t) {
		out, err := exec.Command(sa, "security", "--offline=yes", "--root="+root, unit).CombinedOutput()
		m := overall.FindSubmatch(out)
		if err != nil || m == nil {
			t.Errorf("systemd-analyze security %s: %v\n%s", unit, err, out)
			continue
		}
		score, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			t.Errorf("systemd-analyze security %s: exposure %q: %v", unit, m[1], err)
			continue
		}
		bound := exposureBound(unit)
		t.Logf("%s: exposure %.1f, at most %.1f", unit, score, bound)
		if score > bound {
			t.Errorf("%s: exposure %.1f, want at most %.1f:\n%s", unit, score, bound, out)
		}
	}
}

// TestSandboxesLetScriptsWork holds the sandboxes of the units that run
// deploy/scripts to what the scripts do, so that a tightened unit cannot
// silently take away what its script needs: where it writes, the devices,
// the capabilities and the host views it reads.
func TestSandboxesLetScriptsWork(t *testing.T) {
	script := func(name string) string {
		b, err := os.ReadFile(filepath.Join("scripts", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	has := func(file string, u map[string][]string, key, want string) {
		t.Helper()
		for _, v := range u["Service."+key] {
			if slices.Contains(strings.Fields(v), want) || v == want {
				return
			}
		}
		t.Errorf("%s: %s lacks %q (have %q)", file, key, want, u["Service."+key])
	}
	hasNot := func(file string, u map[string][]string, key, bad, why string) {
		t.Helper()
		if slices.Contains(u["Service."+key], bad) {
			t.Errorf("%s: %s=%s %s", file, key, bad, why)
		}
	}

	// The credentials script reads PID 1's credentials as root with no
	// capability, which systemd hides from a unit with a mount namespace
	// of its own: the unit must set none of what makes one.
	const creds = "gpuhost-agent-credentials.service"
	c := unit(t, filepath.Join("systemd", creds))
	if !strings.Contains(script("gpuhost-agent-credentials"), "creds=/run/credentials/@system\n") {
		t.Error("gpuhost-agent-credentials no longer reads /run/credentials/@system; check its unit's sandbox against it")
	}
	for _, k := range []string{"ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "PrivateMounts", "ProtectKernelTunables",
		"ProtectKernelModules", "ProtectKernelLogs", "ProtectControlGroups", "ProtectProc", "ProcSubset", "ReadWritePaths", "ReadOnlyPaths",
		"InaccessiblePaths", "TemporaryFileSystem", "BindPaths", "RootDirectory", "ConfigurationDirectory", "PrivateNetwork", "ProtectHostname", "ProtectClock"} {
		if len(c["Service."+k]) > 0 {
			t.Errorf("%s: %s=%v makes a mount namespace, in which PID 1's credentials are not to be read", creds, k, c["Service."+k])
		}
	}
	for _, k := range []string{"User", "DynamicUser", "PrivateUsers"} {
		if len(c["Service."+k]) > 0 {
			t.Errorf("%s: %s=%v: the system credentials and /etc/gpuhost/agent are root's", creds, k, c["Service."+k])
		}
	}

	// The selftest scans the host as the offline gate saw it, gathers
	// with nft and cryptsetup, and writes its reports to the disk that
	// asked for them, or its state directory.
	const self = "gpuhost-selftest.service"
	u := unit(t, filepath.Join("systemd", self))
	st := script("gpuhost-selftest")
	for _, want := range []string{`"${RUNTIME_DIRECTORY:-/run}/`, "mkdir -p /var/lib/gpuhost/selftest", "disk=/dev/disk/by-id/virtio-gpuhost-selftest\n", `tar -cf "$disk"`, "nft ", "cryptsetup luksDump", "tar --no-same-owner -xf"} {
		if !strings.Contains(st, want) {
			t.Errorf("gpuhost-selftest no longer has %q; check %s's sandbox against it", want, self)
		}
	}
	if strings.Contains(st, "cp -a") {
		t.Errorf("gpuhost-selftest: cp -a sets owners, which %s's system call filter refuses", self)
	}
	has(self, u, "RuntimeDirectory", "gpuhost-selftest")
	has(self, u, "StateDirectory", "gpuhost/selftest")
	has(self, u, "ReadWritePaths", "-/run/cryptsetup")
	has(self, u, "DeviceAllow", "/dev/disk/by-id/virtio-gpuhost-selftest rw")
	has(self, u, "DeviceAllow", "block-* r")
	has(self, u, "DeviceAllow", "/dev/mapper/control rw")
	for _, cp := range []string{"CAP_DAC_READ_SEARCH", "CAP_SYS_PTRACE", "CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_AUDIT_CONTROL"} {
		has(self, u, "CapabilityBoundingSet", cp)
	}
	has(self, u, "RestrictAddressFamilies", "AF_NETLINK")
	hasNot(self, u, "PrivateNetwork", "yes", "would hide the host's firewall and audit rules from the scan and nft")
	hasNot(self, u, "ProtectKernelModules", "yes", "would hide /usr/lib/modules from the scan")
	hasNot(self, u, "ProtectHome", "yes", "would hide part of the host from the scan")
	hasNot(self, u, "ProtectHome", "tmpfs", "would hide part of the host from the scan")
	hasNot(self, u, "ProtectProc", "invisible", "would hide other processes from the scan")
	hasNot(self, u, "ProcSubset", "pid", "would hide /proc's files from the scan")
	hasNot(self, u, "PrivateDevices", "yes", "would hide the disks the selftest reads and writes")

	// Before the scan, the modules unit reads the same disk, checks each
	// module's detached signature with openssl, and insmods: that and no
	// more.
	const mods = "gpuhost-selftest-modules.service"
	m := unit(t, filepath.Join("systemd", mods))
	ms := script("gpuhost-selftest-modules")
	for _, want := range []string{"disk=/dev/disk/by-id/virtio-gpuhost-selftest\n", "tar --no-same-owner -xf", "cert=/var/lib/dkms/mok.pub\n", "openssl dgst -sha256 -verify", `insmod "$ko"`, "${RUNTIME_DIRECTORY:-"} {
		if !strings.Contains(ms, want) {
			t.Errorf("gpuhost-selftest-modules no longer has %q; check %s's sandbox against it", want, mods)
		}
	}
	if c := m["Service.CapabilityBoundingSet"]; !slices.Equal(c, []string{"CAP_SYS_MODULE"}) {
		t.Errorf("%s: CapabilityBoundingSet %v, want CAP_SYS_MODULE alone", mods, c)
	}
	has(mods, m, "SystemCallFilter", "@module")
	has(mods, m, "DeviceAllow", "/dev/disk/by-id/virtio-gpuhost-selftest r")
	has(mods, m, "RuntimeDirectory", "gpuhost-selftest-modules")
	has(mods, m, "RuntimeDirectoryPreserve", "yes")
	hasNot(mods, m, "ProtectKernelModules", "yes", "takes CAP_SYS_MODULE away, and insmod with it")
	if !strings.Contains(st, "/run/gpuhost-selftest-modules/modules.txt") {
		t.Errorf("gpuhost-selftest does not report what %s loaded", mods)
	}
	if !slices.Contains(u["Unit.Wants"], mods) || !slices.Contains(u["Unit.After"], mods) {
		t.Errorf("%s does not pull in %s before its scan: Wants %v After %v", self, mods, u["Unit.Wants"], u["Unit.After"])
	}
}

// TestUnitsLetNVMLIn: the device policy is closed, so the GPUs' nodes must
// be allowed by name and class, or NVML finds no GPU under the unit; and
// the scan must still read /proc, /sys and the journal, and write its
// history.
func TestUnitsLetNVMLIn(t *testing.T) {
	for _, file := range services {
		u := unit(t, filepath.Join("systemd", file))
		allowed := strings.Join(u["Service.DeviceAllow"], "\n")
		for _, want := range []string{"/dev/nvidiactl rw", "/dev/nvidia-uvm rw", "char-nvidia rw", "char-nvidia-uvm rw", "char-nvidia-caps r"} {
			if !strings.Contains(allowed, want) {
				t.Errorf("%s: DeviceAllow lacks %q", file, want)
			}
		}
		for k, bad := range map[string]string{"PrivateDevices": "yes", "ProcSubset": "pid", "ProtectProc": "invisible", "PrivateNetwork": "yes", "InaccessiblePaths": "/sys"} {
			for _, v := range u["Service."+k] {
				if v == bad {
					t.Errorf("%s: %s=%s would hide what the scan reads", file, k, v)
				}
			}
		}
		if !strings.Contains(strings.Join(u["Unit.Documentation"], " "), "man:gpuhost(1)") {
			t.Errorf("%s: Documentation does not name gpuhost(1)", file)
		}
	}
}
