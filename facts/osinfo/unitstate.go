package osinfo

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuhost/gpuhost/facts/collect"
)

// unitStateTimeout bounds one question to systemd.
const unitStateTimeout = 5 * time.Second

// unitState returns a unit's ActiveState on a live host. A wants link says
// what was enabled, not what runs: only the service manager knows whether
// the unit that loads the firewall is active, so without one the answer is
// "unknown", never a guess.
func unitState(ctx context.Context, cenv *collect.Env, unit string) (state, reason string) {
	if cenv.UnitState != nil {
		return cenv.UnitState(ctx, unit)
	}
	envFS := cenv.FS
	// sd_booted(3): systemd runs as init exactly when this directory exists.
	if info, err := envFS.Stat("/run/systemd/system"); err != nil || !info.IsDir() {
		return "unknown", "systemd is not running (no /run/systemd/system)"
	}
	if root := filepath.Clean(envFS.Root()); root != "/" {
		// A scanner in a container with the host at /host asks the host's
		// systemd over the host's system bus; systemctl would refuse, as
		// systemd is not the container's init.
		return busctlState(ctx, "busctl", filepath.Join(root, "run/dbus/system_bus_socket"), unit)
	}
	return systemctlState(ctx, "systemctl", unit)
}

// systemctlState asks systemctl, which talks to systemd over D-Bus.
func systemctlState(ctx context.Context, systemctl, unit string) (state, reason string) {
	return askSystemd(ctx, systemctl, unit, "show", "--property=ActiveState", "--value", "--", unit)
}

// busctlState reads the unit's ActiveState property over the system bus
// at socket.
func busctlState(ctx context.Context, busctl, socket, unit string) (state, reason string) {
	state, reason = askSystemd(ctx, busctl, unit, "--address=unix:path="+socket, "get-property",
		"org.freedesktop.systemd1", "/org/freedesktop/systemd1/unit/"+busLabel(unit), "org.freedesktop.systemd1.Unit", "ActiveState")
	if reason != "" {
		return state, reason
	}
	// busctl prints the D-Bus type and a quoted value: s "active".
	if v, ok := strings.CutPrefix(state, "s \""); ok && strings.HasSuffix(v, "\"") {
		return strings.TrimSuffix(v, "\""), ""
	}
	return "unknown", "systemd gave no ActiveState for " + unit
}

// busLabel escapes a unit name into an object path element as systemd
// does: every byte but letters and digits becomes _ and two hex digits.
func busLabel(unit string) string {
	var b strings.Builder
	for i := 0; i < len(unit); i++ {
		c := unit[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "_%02x", c)
	}
	return b.String()
}

func askSystemd(ctx context.Context, tool, unit string, args ...string) (state, reason string) {
	path, err := exec.LookPath(tool)
	if err != nil {
		return "unknown", tool + " is not installed: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, unitStateTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).Output()
	if err != nil {
		why := err.Error()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if line, _, _ := strings.Cut(strings.TrimSpace(string(exit.Stderr)), "\n"); line != "" {
				why = line
			}
		}
		return "unknown", "asking systemd for " + unit + ": " + why
	}
	state = strings.TrimSpace(string(out))
	if state == "" || strings.Contains(state, "\n") {
		return "unknown", "systemd gave no ActiveState for " + unit
	}
	return state, ""
}

// UnitActiveState is unitState for collectors in other packages: a unit's
// ActiveState on a live host, or "unknown" and why.
func UnitActiveState(ctx context.Context, cenv *collect.Env, unit string) (state, reason string) {
	return unitState(ctx, cenv, unit)
}
