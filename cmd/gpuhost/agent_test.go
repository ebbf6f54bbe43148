package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAgentOnceAndHistory: two recorded runs of a baked tree, the second
// after a config file changed; history lists both and diff names the drift.
func TestAgentOnceAndHistory(t *testing.T) {
	agentCmd, history := (*app).agentCommand, (*app).historyCommand
	root, baseline := bakedTree(t)
	db := filepath.Join(t.TempDir(), "history.db")
	once := func() outcome {
		return runCommand(t, agentCmd, "--once", "--db", db, "--rootfs", root, "--baseline", baseline, "--params", params, "--fail-on", "critical")
	}
	o := once()
	if o.code != 0 || !strings.HasPrefix(o.stdout, "run 1: exit 0") {
		t.Fatalf("first run: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	f, err := os.OpenFile(filepath.Join(root, "etc", "ssh", "sshd_config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("PermitRootLogin no\n")
	f.Close()
	if o := once(); !strings.HasPrefix(o.stdout, "run 2: ") {
		t.Fatalf("second run: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}

	o = runCommand(t, history, "--db", db)
	lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
	if o.code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") || !strings.HasPrefix(lines[1], "2 ") || !strings.HasPrefix(lines[2], "1 ") {
		t.Fatalf("history: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	if !strings.Contains(lines[1], "rootfs:") {
		t.Errorf("history does not show the target: %s", lines[1])
	}
	if o := runCommand(t, history, "--db", db, "--limit", "1"); strings.Count(o.stdout, "\n") != 2 {
		t.Errorf("--limit 1:\n%s", o.stdout)
	}

	o = runCommand(t, history, "diff", "1", "2", "--db", db)
	if o.code != 1 || !strings.Contains(o.stdout, "GH-DRIFT-008") || !strings.Contains(o.stdout, "NEW FAILURES (1)") {
		t.Fatalf("history diff 1 2: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	if o := runCommand(t, history, "diff", "2", "1", "--db", db, "--format", "json"); o.code != 0 || !strings.Contains(o.stdout, `"fixed": [`) {
		t.Errorf("history diff 2 1: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
}

func TestHistoryErrors(t *testing.T) {
	history := (*app).historyCommand
	missing := filepath.Join(t.TempDir(), "none.db")
	if o := runCommand(t, history, "--db", missing); o.code != 2 || !strings.Contains(o.stderr, missing) {
		t.Errorf("missing db: exit %d %s", o.code, o.stderr)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("history created a database")
	}
	db := filepath.Join(t.TempDir(), "h.db")
	if o := runCommand(t, (*app).agentCommand, "--once", "--db", db, "--rootfs", hardened, "--params", params, "--fail-on", "critical"); !strings.HasPrefix(o.stdout, "run 1:") {
		t.Fatalf("agent --once: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	for name, args := range map[string][]string{
		"no such run":  {"diff", "1", "7", "--db", db},
		"not an id":    {"diff", "1", "x", "--db", db},
		"unknown form": {"diff", "1", "1", "--db", db, "--format", "html"},
	} {
		if o := runCommand(t, history, args...); o.code != 2 {
			t.Errorf("%s: exit %d %s", name, o.code, o.stderr)
		}
	}
}

func TestAgentFlagErrors(t *testing.T) {
	agentCmd := (*app).agentCommand
	db := filepath.Join(t.TempDir(), "h.db")
	for name, args := range map[string][]string{
		"bad retain":    {"--once", "--db", db, "--retain", "30x"},
		"bad cron":      {"--once", "--db", db, "--cron", "every tuesday"},
		"cert, no key":  {"--once", "--db", db, "--tls-cert", "c.pem"},
		"bad fail-on":   {"--once", "--db", db, "--fail-on", "severe"},
		"db dir a file": {"--once", "--db", filepath.Join(params, "h.db"), "--rootfs", hardened},
	} {
		if o := runCommand(t, agentCmd, args...); o.code != 2 {
			t.Errorf("%s: exit %d %s", name, o.code, o.stderr)
		}
	}
}

// TestAgentNodeMarksNeedAPod: --node-label and --node-taint work only where
// a pod finds the API server, and say so at start rather than at each run.
func TestAgentNodeMarksNeedAPod(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("NODE_NAME", "")
	agentCmd := (*app).agentCommand
	db := filepath.Join(t.TempDir(), "h.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--once", "--db", db, "--rootfs", hardened, "--node-label", "--node-name", "gpu-1"}, "not in a Kubernetes pod"},
		{[]string{"--once", "--db", db, "--rootfs", hardened, "--node-taint", "--node-name", "GPU_1"}, "not a Kubernetes node name"},
		{[]string{"--once", "--db", db, "--rootfs", hardened, "--node-taint"}, `node name ""`},
	} {
		o := runCommand(t, agentCmd, c.args...)
		if o.code != 2 || !strings.Contains(o.stderr, c.want) {
			t.Errorf("%v: exit %d %s; want 2 and %q", c.args, o.code, o.stderr, c.want)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("the agent ran a scan with node marks it cannot set")
	}
}

func TestParseRetain(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "12h": 12 * time.Hour, "0": 0, "": 0} {
		if got, err := parseRetain(in); err != nil || got != want {
			t.Errorf("parseRetain(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"-1d", "d", "1y", "-5h"} {
		if _, err := parseRetain(in); err == nil {
			t.Errorf("parseRetain(%q) accepted", in)
		}
	}
}
