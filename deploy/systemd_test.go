package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// maxExposure is the most `systemd-analyze security` may score the agent's
// services (0 is locked down, 10 is unprotected).
const maxExposure = 3.0

var services = []string{"gpuhost-agent.service", "gpuhost-agentd.service"}

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
// exist), and holds the agent's services to maxExposure by
// `systemd-analyze security`.
func TestSystemdAnalyze(t *testing.T) {
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
	for _, unit := range services {
		out, err := exec.Command(sa, "security", "--offline=yes", "--root="+root, unit).CombinedOutput()
		m := overall.FindSubmatch(out)
		if err != nil || m == nil {
			t.Errorf("systemd-analyze security %s: %v\n%s", unit, err, out)
			continue
		}
		score, _ := strconv.ParseFloat(string(m[1]), 64)
		t.Logf("%s: exposure %.1f", unit, score)
		if score > maxExposure {
			t.Errorf("%s: exposure %.1f, want at most %.1f:\n%s", unit, score, maxExposure, out)
		}
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
