package ssh_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
)

const reloadSSHD = `Port %d
ListenAddress 127.0.0.1
HostKey %s/ed25519
PidFile %s/sshd.pid
UsePAM no
PermitRootLogin no
PasswordAuthentication %s
KbdInteractiveAuthentication no
`

// TestLiveSSHDEditedNotReloaded edits a running sshd's file to forbid
// passwords without reloading it: the file passes GH-SSH-002, the daemon
// still takes passwords, and the scan must say so until the reload.
func TestLiveSSHDEditedNotReloaded(t *testing.T) {
	var dir string
	p, conf, port := startSSHDWith(t, [][]string{{"ed25519", "-t", "ed25519"}}, func(d string, port int) string {
		dir = d
		return fmt.Sprintf(reloadSSHD, port, d, d, "yes")
	})
	pid := p.Cmd.Process.Pid
	pidFile := filepath.Join(dir, "sshd.pid")
	// sshd writes its pid file after it logs that it listens.
	p.WaitFor(t, 20*time.Second, "the pid file", func() bool {
		b, err := os.ReadFile(pidFile)
		return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(pid)
	})
	listen := "127.0.0.1:" + strconv.Itoa(port)
	name := fmt.Sprintf("sshd pid %d (%s; %s)", pid, listen, conf)

	f := collectLive(t)
	before := daemonOf(t, f, pid)
	if before.AgeError != "" || before.LoadedFrom != "pid_file" || before.ConfigNewer || before.NewestConfig != conf {
		t.Fatalf("fresh daemon's age = %+v", before.SSHDaemonAge)
	}
	if m := authMethods(t, before); !slices.Contains(m, "password") {
		t.Fatalf("PasswordAuthentication yes, but the wire offers %v", m)
	}
	if r := evaluate(t, f, before)["GH-SSH-002"]; r.Status != "fail" || !slices.Equal(r.Messages, []string{name + `: PasswordAuthentication is "yes"; want no`}) {
		t.Errorf("GH-SSH-002 with passwords on: %s %q", r.Status, r.Messages)
	}

	// The edit, with no reload. The file's time must come after the pid
	// file's for the scan to tell them apart; a coarse clock could give
	// both the same.
	time.Sleep(50 * time.Millisecond)
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(reloadSSHD, port, dir, dir, "no")), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, pf := mtime(t, conf), mtime(t, pidFile); !c.After(pf) {
		t.Fatalf("config modified at %s, not after the pid file's %s", c, pf)
	}
	file := sshdT(t, conf, "-C", "user=root,host=x,addr=127.0.0.1")
	f = collectLive(t)
	edited := daemonOf(t, f, pid)
	wire := authMethods(t, edited)
	t.Logf("edited, not reloaded: sshd -T says passwordauthentication %s permitrootlogin %s; the wire offers %v; age %+v",
		file["passwordauthentication"], file["permitrootlogin"], wire, edited.SSHDaemonAge)
	if file["passwordauthentication"] != "no" || edited.PasswordAuthentication != "no" || !slices.Contains(wire, "password") {
		t.Errorf("after the edit: sshd -T %q, facts %q, wire %v; want no, no and a wire still offering password",
			file["passwordauthentication"], edited.PasswordAuthentication, wire)
	}
	if !edited.ConfigNewer || edited.NewestConfig != conf || edited.LoadedAt != before.LoadedAt || edited.StartedAt != before.StartedAt {
		t.Errorf("after the edit: age %+v, want the config newer than the load at %s", edited.SSHDaemonAge, before.LoadedAt)
	}
	stale := fmt.Sprintf("%s runs an older configuration than %s (modified at %s, after the daemon started at %s): reload it (systemctl reload ssh)",
		name, conf, edited.NewestConfigModified, edited.LoadedAt)
	offers := fmt.Sprintf("%s runs an older configuration than %s: it offers password on the wire at %s, which the file forbids (PasswordAuthentication no): reload it (systemctl reload ssh)",
		name, conf, listen)
	got := evaluate(t, f, edited)
	for id, want := range map[string][]string{
		"GH-SSH-001": {stale, offers},
		"GH-SSH-002": {stale, offers},
		"GH-SSH-007": {stale, offers},
	} {
		if r := got[id]; r.Status != "fail" || !slices.Equal(r.Messages, slices.Sorted(slices.Values(want))) {
			t.Errorf("%s edited, not reloaded: %s %q, want fail with %q", id, r.Status, r.Messages, want)
		}
	}

	// The reload: sshd re-execs itself under the same pid, with the same
	// start time, and rewrites its pid file.
	listening := "Server listening on 127.0.0.1 port " + strconv.Itoa(port)
	pidTime := mtime(t, pidFile)
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	p.WaitFor(t, 20*time.Second, "the re-exec after SIGHUP", func() bool {
		fi, err := os.Stat(pidFile)
		return strings.Count(p.Output(), listening) >= 2 && err == nil && fi.ModTime().After(pidTime)
	})
	if p.Exited() || !strings.Contains(p.Output(), "Received SIGHUP; restarting.") {
		t.Fatalf("sshd after SIGHUP:\n%s", p.Output())
	}
	f = collectLive(t)
	reloaded := daemonOf(t, f, pid)
	wire = authMethods(t, reloaded)
	t.Logf("reloaded: the wire offers %v; age %+v", wire, reloaded.SSHDaemonAge)
	if slices.Contains(wire, "password") || !slices.Contains(wire, "publickey") {
		t.Errorf("after the reload the wire offers %v; sshd -T says passwordauthentication %s", wire, file["passwordauthentication"])
	}
	if reloaded.ConfigNewer || reloaded.StartedAt != before.StartedAt || reloaded.LoadedAt == before.LoadedAt || reloaded.LoadedFrom != "pid_file" {
		t.Errorf("after the reload: age %+v, want the same start (%s), a later load and no newer config", reloaded.SSHDaemonAge, before.StartedAt)
	}
	got = evaluate(t, f, reloaded)
	for _, id := range []string{"GH-SSH-001", "GH-SSH-002", "GH-SSH-007"} {
		if r := got[id]; r.Status != "pass" {
			t.Errorf("%s after the reload: %s %q", id, r.Status, r.Messages)
		}
	}
}

// authMethods returns what the none probe read from the daemon's one
// listener.
func authMethods(t *testing.T, d facts.SSHDaemon) []string {
	t.Helper()
	if len(d.Wire) != 1 || d.Wire[0].Error != "" || d.Wire[0].AuthError != "" {
		t.Fatalf("wire = %+v", d.Wire)
	}
	return d.Wire[0].AuthMethods
}

func mtime(t *testing.T, name string) time.Time {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.ModTime()
}
