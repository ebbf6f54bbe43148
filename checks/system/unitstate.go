package system

import (
	"context"
	"os/exec"
	"strings"
	"time"

	"github.com/gpuhost/gpuhost/checks/collector"
)

// unitStateTimeout bounds one question to systemd.
const unitStateTimeout = 5 * time.Second

// unitState returns a unit's ActiveState on a live host. A wants link says
// what was enabled, not what runs: only the service manager knows whether
// the unit that loads the firewall is active, so without one the answer is
// "unknown", never a guess.
func unitState(ctx context.Context, env *collector.Env, unit string) (state, reason string) {
	if env.UnitState != nil {
		return env.UnitState(ctx, unit)
	}
	// sd_booted(3): systemd runs as init exactly when this directory exists.
	if info, err := env.FS.Stat("/run/systemd/system"); err != nil || !info.IsDir() {
		return "unknown", "systemd is not running (no /run/systemd/system)"
	}
	return systemctlState(ctx, "systemctl", unit)
}

// systemctlState asks systemctl, which talks to systemd over D-Bus.
func systemctlState(ctx context.Context, systemctl, unit string) (state, reason string) {
	path, err := exec.LookPath(systemctl)
	if err != nil {
		return "unknown", "systemctl is not installed: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, unitStateTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "show", "--property=ActiveState", "--value", "--", unit).Output()
	if err != nil {
		return "unknown", "asking systemd for " + unit + ": " + err.Error()
	}
	state = strings.TrimSpace(string(out))
	if state == "" || strings.ContainsAny(state, " \n") {
		return "unknown", "systemd gave no ActiveState for " + unit
	}
	return state, ""
}
