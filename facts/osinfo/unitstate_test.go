package osinfo

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

func TestUnitStateWithoutSystemd(t *testing.T) {
	dir := t.TempDir()
	env := collecttest.NewEnv(t, dir, true)
	env.UnitState = nil
	state, reason := unitState(context.Background(), env, "nftables.service")
	if state != "unknown" || !strings.Contains(reason, "/run/systemd/system") {
		t.Errorf("no /run/systemd/system: %q %q", state, reason)
	}
	if state, reason := systemctlState(context.Background(), "no-such-systemctl", "nftables.service"); state != "unknown" || !strings.Contains(reason, "not installed") {
		t.Errorf("no systemctl: %q %q", state, reason)
	}
}

// Where systemctl is installed but systemd is not PID 1 (a container, this
// build machine), systemctl fails and the state is unknown, not inactive.
func TestSystemctlWithoutRunningSystemd(t *testing.T) {
	if _, err := exec.LookPath("systemctl"); err != nil {
		t.Skip("systemctl is not installed")
	}
	if unitDirExists("/run/systemd/system") {
		t.Skip("systemd runs here; this test is for machines where it does not")
	}
	state, reason := systemctlState(context.Background(), "systemctl", "nftables.service")
	if state != "unknown" || !strings.Contains(reason, "asking systemd for nftables.service: ") || strings.HasSuffix(reason, "exit status 1") {
		t.Errorf("%q %q; want unknown with what systemctl said", state, reason)
	}
	// A host mounted elsewhere (a DaemonSet's /host) that looks booted with
	// systemd is asked over its own system bus; here that socket is absent.
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{"run/systemd/system/": nil})
	env := collecttest.NewEnv(t, dir, true)
	env.UnitState = nil
	state, reason = unitState(context.Background(), env, "nftables.service")
	if state != "unknown" || !strings.Contains(reason, "No such file or directory") {
		t.Errorf("host root %s: %q %q; want unknown, its bus socket missing", dir, state, reason)
	}
	if got := busLabel("nftables.service"); got != "nftables_2eservice" {
		t.Errorf("bus label %q", got)
	}
}

func unitDirExists(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}
