package scan

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"golang.org/x/crypto/ssh"

	"github.com/gpuhost/gpuhost/builder/gpu"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/network"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// stockSSHD is the build instance's sshd_config before the plan: a source
// image's, which takes passwords and OpenSSH's default algorithms (with
// aes128-ctr among them), and logs root in with the test's key.
const stockSSHD = `Include /etc/ssh/sshd_config.d/*.conf
ListenAddress 127.0.0.1:22
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PasswordAuthentication yes
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
X11Forwarding yes
Subsystem sftp /usr/lib/openssh/sftp-server
`

// liveHardening is the hardening the test applies: the amazon-ebs
// template's (host keys kept), with root in a role group and no second
// factor so that the test's root key still logs in once sshd has the new
// settings. auditd and journald are left out: the kernel's audit rules
// and the journal daemon are the whole machine's, not a namespace's, and
// loading them would change the machine the test runs on. Their part of
// the step is held only by builder/gpu's golden plans and
// TestHardeningApplyLiveStep. tls and sudo have nothing to apply.
const liveHardening = `{"driver": {"version": "535.261.03-1", "source": "debian"},
	"distro": {"id": "debian", "version_id": "12", "codename": "bookworm"}, "live": true,
	"hardening": {"roles": {"developer": ["root"]}, "tls": {"skip": true}, "sudo": {"skip": true},
		"ssh": {"host_keys": "keep", "permit_root_login": "prohibit-password", "second_factor": "none"},
		"audit": {"skip": true}, "journald": {"skip": true}}}`

// startLiveInstance is a build instance whose sshd runs as the host's own
// daemon would: from /etc/ssh/sshd_config, with its host keys under
// /etc/ssh and its pid in /run/sshd.pid. It runs in a network namespace
// (its own ruleset), and a mount namespace whose /run is a directory of the
// test's and whose /etc is an overlay on the machine's /etc with the
// test's directory etc/upper on top: whatever the plan writes to /etc over
// ssh lands there, and the machine's /etc is never written. It returns the
// instance, the upper directory, the private /run and what logs in again.
func startLiveInstance(t *testing.T) (in *instance, upper, run string, relogin func(ciphers ...string) error) {
	t.Helper()
	testutil.Root(t)
	sshd := testutil.Tool(t, "sshd", "openssh-server")
	testutil.Tool(t, "ssh-keygen", "openssh-client")
	testutil.Tool(t, "nft", "nftables")
	unshare := testutil.Tool(t, "unshare", "util-linux")
	netns := testutil.Netns(t)
	name := netns[len(netns)-1]
	dir := t.TempDir()
	signer, authorized := clientKey(t, dir)
	stock := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(stock, fmt.Appendf(nil, stockSSHD, authorized), 0o600); err != nil {
		t.Fatal(err)
	}
	etc, run := filepath.Join(dir, "etc"), filepath.Join(dir, "run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	// The machine's own host keys and drop-ins are hidden, not removed: the
	// overlay records their removal in upper.
	setup := `set -e
mkdir -p "$1/upper" "$1/work"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/upper,workdir=$1/work" /etc
rm -rf /etc/ssh/sshd_config.d /etc/ssh/ssh_host_*
mkdir /etc/ssh/sshd_config.d
cat "$2" >/etc/ssh/sshd_config
ssh-keygen -q -N '' -t ed25519 -f /etc/ssh/ssh_host_ed25519_key
exec "$3" -D -e`
	argv := append(netns, unshare)
	argv = append(argv, testutil.PrivateRun(run, "sh", "-c", setup, "sh", etc, stock, sshd)...)
	p := testutil.Start(t, exec.Command(argv[0], argv[1:]...))
	p.WaitLine(t, 20*time.Second, "Server listening on 127.0.0.1 port 22")
	upper = filepath.Join(etc, "upper")
	pinned := readHostKey(t, filepath.Join(upper, "ssh", "ssh_host_ed25519_key.pub"))
	relogin = func(ciphers ...string) error {
		c, err := testutil.DialNetns(name, "tcp", "127.0.0.1:22")
		if err != nil {
			return err
		}
		defer c.Close()
		cfg := &ssh.ClientConfig{User: "root", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.FixedHostKey(pinned), Timeout: 10 * time.Second}
		cfg.Ciphers = ciphers
		sc, chans, reqs, err := ssh.NewClientConn(c, "127.0.0.1:22", cfg)
		if err != nil {
			return err
		}
		client := ssh.NewClient(sc, chans, reqs)
		defer client.Close()
		s, err := client.NewSession()
		if err != nil {
			return err
		}
		defer s.Close()
		if out, err := s.Output("echo logged in"); err != nil || string(out) != "logged in\n" {
			return fmt.Errorf("a command over the new login: %q, %v", out, err)
		}
		return nil
	}
	return &instance{comm: connect(t, name, signer, pinned, false, p), sshd: p}, upper, run, relogin
}

// remote runs command over comm as a provisioner does, and returns its
// standard output, the whole log and the exit status.
func remote(t *testing.T, comm packersdk.Communicator, command string) (stdout, log string, code int) {
	t.Helper()
	var out bytes.Buffer
	u := newUI()
	cmd := &packersdk.RemoteCmd{Command: command, Stdout: &out}
	if err := cmd.RunWithUi(context.Background(), comm, u); err != nil {
		t.Fatalf("running %s over ssh: %v\n%s", command, err, u.out.String())
	}
	return out.String(), u.out.String(), cmd.ExitStatus()
}

// kernelRuleset is the input policy and allowed ports of the ruleset the
// namespace's kernel holds, read with nft over the given session.
func kernelRuleset(t *testing.T, comm packersdk.Communicator) (string, []int) {
	t.Helper()
	out, log, code := remote(t, comm, "nft list ruleset")
	if code != 0 {
		t.Fatalf("nft list ruleset exited %d:\n%s", code, log)
	}
	policy, ports, _, err := network.ParseNftables([]byte(out))
	if err != nil {
		t.Fatalf("the kernel's ruleset: %v\n%s", err, out)
	}
	return policy, ports
}

// TestLiveApplyOverSSH runs the gpuhost-gpu plan's hardening of a live
// build instance, live = true, as the provisioner runs its plan: the
// rendered shell (its preamble, and the steps hardening: sshd, hardening:
// firewall and hardening: apply live), uploaded and run over Packer's ssh
// communicator against an instance whose sshd is its own daemon. Read back
// from the kernel and the daemon, it took effect: the namespace's ruleset
// is the hardened one with input policy drop; sshd was reloaded by its own
// pid (same process, SIGHUP in its log, its pid file written again) and a
// new login sees its new settings (aes128-ctr, which the source image's
// sshd accepted, is refused); the build's open session goes on working;
// new logins still succeed with the kept host key. Then gpuhost's own
// facts host for the instance, collected over the same session as
// gpuhost-scan collects them, agree.
func TestLiveApplyOverSSH(t *testing.T) {
	leanCLI(t)
	in, upper, run, relogin := startLiveInstance(t)
	pid := in.sshd.Cmd.Process.Pid

	cfg, err := gpu.DecodeJSON([]byte(liveHardening))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := gpu.RenderPlan(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	preamble, _, _ := strings.Cut(plan, "\nstep \"")
	script := preamble + "\n"
	for _, s := range []string{"hardening: sshd", "hardening: firewall", "hardening: apply live"} {
		script += "\nstep '" + s + "'\n" + testutil.PlanStep(t, plan, s)
	}

	// Before: the source image's state. The kernel holds no ruleset, and
	// sshd takes a cipher the hardening drops.
	if policy, _ := kernelRuleset(t, in.comm); policy == "drop" {
		t.Fatal("the instance's kernel drops input before the plan ran")
	}
	if err := relogin("aes128-ctr"); err != nil {
		t.Fatalf("the source image's sshd refuses aes128-ctr already: %v", err)
	}

	// The communicator logs in again, silently, when its connection drops;
	// sshd logs each login.
	logins := strings.Count(in.sshd.Output(), "Accepted publickey")
	work := t.TempDir()
	path := filepath.Join(work, "gpuhost-gpu-plan.sh")
	if err := in.comm.Upload(path, strings.NewReader(script), nil); err != nil {
		t.Fatal(err)
	}
	// The plan's own temporary directory goes under the test's too.
	_, log, code := remote(t, in.comm, fmt.Sprintf("TMPDIR='%s' sh '%s'", work, path))
	if code != 0 {
		t.Fatalf("the plan exited %d:\n%s\nsshd:\n%s", code, log, in.sshd.Output())
	}
	if !strings.Contains(log, "==> gpuhost-gpu step: hardening: apply live") || !strings.Contains(log, fmt.Sprintf("sshd (pid %d) reloaded its configuration", pid)) {
		t.Errorf("the plan's log does not show the live step reloading sshd (pid %d):\n%s", pid, log)
	}
	for _, f := range []string{strings.TrimPrefix(gpu.NftablesConf, "/etc/"), strings.TrimPrefix(gpu.SSHDropIn, "/etc/")} {
		if _, err := os.Stat(filepath.Join(upper, f)); err != nil {
			t.Errorf("the plan did not write /etc/%s where the instance keeps it: %v", f, err)
		}
	}

	// The kernel's ruleset, read over the build's open session (which
	// the ruleset and sshd's reload both left up) and from outside it.
	policy, ports := kernelRuleset(t, in.comm)
	if policy != "drop" || !slices.Equal(ports, []int{22}) {
		t.Errorf("after the plan the namespace's kernel has input policy %q with ports %v; want drop with [22]", policy, ports)
	}
	if n := strings.Count(in.sshd.Output(), "Accepted publickey"); n != logins {
		t.Errorf("sshd logged %d logins while the plan ran and after, want none: the build's connection did not survive\n%s", n-logins, in.sshd.Output())
	}

	// sshd: the same process, told to reload, listening again.
	if in.sshd.Exited() {
		t.Fatalf("sshd exited:\n%s", in.sshd.Output())
	}
	if !strings.Contains(in.sshd.Output(), "Received SIGHUP; restarting.") {
		t.Errorf("sshd's log shows no reload:\n%s", in.sshd.Output())
	}
	if got, err := os.ReadFile(filepath.Join(run, "sshd.pid")); err != nil || strings.TrimSpace(string(got)) != strconv.Itoa(pid) {
		t.Errorf("/run/sshd.pid holds %q (%v), want the listener's pid %d", got, err, pid)
	}
	if err := relogin("aes128-ctr"); err == nil {
		t.Error("a new login with aes128-ctr succeeds: sshd did not take the hardened Ciphers")
	}
	if err := relogin(cfg.Hardening.SSH.Ciphers...); err != nil {
		t.Errorf("a new login with the hardened ciphers: %v\nsshd:\n%s", err, in.sshd.Output())
	}

	// gpuhost's facts of the running instance say the same.
	err, scanLog, prefix := in.run(t, map[string]interface{}{"params": params, "execute_command": asRoot, "reports": []string{"json"}})
	data, rerr := os.ReadFile(prefix + ".scan.facts.json")
	if rerr != nil {
		t.Fatalf("no facts were judged (%v): %v\n%s", rerr, err, scanLog)
	}
	var f facts.Facts
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if fw := f.Network.Firewall; fw == nil || fw.Source != "kernel" || fw.DefaultInputPolicy != "drop" || !slices.Equal(fw.AllowedPorts, []int{22}) {
		t.Errorf("the facts' firewall is %+v; want the kernel's, dropping, admitting 22", fw)
	}
	var daemon *facts.SSHDaemon
	for i, d := range f.SSH.Daemons {
		if d.PID == pid {
			daemon = &f.SSH.Daemons[i]
		}
	}
	if daemon == nil {
		t.Fatalf("the instance's sshd (pid %d) is not among the facts' daemons %+v", pid, f.SSH.Daemons)
	}
	if daemon.PasswordAuthentication != "no" || len(daemon.Wire) == 0 {
		t.Errorf("the facts' sshd: password_authentication %q, wire %+v", daemon.PasswordAuthentication, daemon.Wire)
	}
	for _, w := range daemon.Wire {
		for _, c := range w.Ciphers {
			if !slices.Contains(cfg.Hardening.SSH.Ciphers, c) {
				t.Errorf("sshd offers %s on %s after the plan; the hardening allows %v", c, w.Address, cfg.Hardening.SSH.Ciphers)
			}
		}
	}
}
