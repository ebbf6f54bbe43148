package ssh_test

import (
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

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/ssh"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/target"
	"github.com/gpuhost/gpuhost/target/collector"
)

// collectLive runs the network, tls and ssh collectors, and the packages
// collector they need, over "/" as a live host, as `gpuhost facts host`
// does.
func collectLive(t *testing.T) *facts.Facts {
	t.Helper()
	var cs []collector.Collector
	for _, c := range target.All() {
		if slices.Contains([]string{"network", "packages", "tls", "ssh"}, c.Name()) {
			cs = append(cs, c)
		}
	}
	f, err := target.Host(context.Background(), "/", target.Options{Collectors: cs})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"network", "tls", "ssh"} {
		if st := f.Collectors[name]; st.Status != facts.StatusOK {
			t.Fatalf("collector %s: %s (%s)", name, st.Status, st.Reason)
		}
	}
	return f
}

// startSSHD writes config into a temporary directory with host keys of the
// given ssh-keygen types, starts sshd on a free loopback port and returns the
// process, the config file and the port. sshd insists on /run/sshd; it gets
// a private /run of its own in a mount namespace, so the machine's is never
// touched.
func startSSHD(t *testing.T, keys [][]string, config func(dir string, port int) string) (*testutil.Proc, string, int) {
	t.Helper()
	return startSSHDWith(t, keys, config, "-o", "PidFile=none")
}

// startSSHDWith is startSSHD with sshd's extra arguments as given.
func startSSHDWith(t *testing.T, keys [][]string, config func(dir string, port int) string, extra ...string) (*testutil.Proc, string, int) {
	t.Helper()
	testutil.Root(t)
	sshd := testutil.Tool(t, "sshd", "openssh-server")
	keygen := testutil.Tool(t, "ssh-keygen", "openssh-client")
	unshare := testutil.Tool(t, "unshare", "util-linux")
	dir := t.TempDir()
	for _, k := range keys {
		args := append([]string{"-q", "-N", "", "-f", filepath.Join(dir, k[0])}, k[1:]...)
		testutil.Run(t, 30*time.Second, keygen, args...)
	}
	port := testutil.FreePort(t)
	conf := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(conf, []byte(config(dir, port)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := testutil.Start(t, exec.Command(unshare, withPrivateRun(t, append([]string{sshd, "-D", "-e", "-f", conf}, extra...)...)...))
	p.WaitLine(t, 20*time.Second, "Server listening on 127.0.0.1 port "+strconv.Itoa(port))
	return p, conf, port
}

// daemonOf returns the facts of the sshd with the given pid.
func daemonOf(t *testing.T, f *facts.Facts, pid int) facts.SSHDaemon {
	t.Helper()
	for _, d := range f.SSH.Daemons {
		if d.PID == pid {
			return d
		}
	}
	t.Fatalf("no daemon with pid %d in %+v", pid, f.SSH.Daemons)
	return facts.SSHDaemon{}
}

// withPrivateRun returns unshare's arguments to run argv with a private,
// empty /run of its own.
func withPrivateRun(t *testing.T, argv ...string) []string {
	t.Helper()
	return testutil.PrivateRun(t.TempDir(), argv...)
}

// sshdT returns sshd's effective settings for conf ("sshd -T"), the first
// value of each keyword.
func sshdT(t *testing.T, conf string, extra ...string) map[string]string {
	t.Helper()
	sshd := testutil.Tool(t, "sshd", "openssh-server")
	unshare := testutil.Tool(t, "unshare", "util-linux")
	out := testutil.Run(t, 30*time.Second, unshare, withPrivateRun(t, append([]string{sshd, "-T", "-f", conf}, extra...)...)...)
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(l, " ")
		if ok {
			if _, seen := m[k]; !seen {
				m[k] = v
			}
		}
	}
	return m
}

func join(s []string) string { return strings.Join(s, ",") }

const weakSSHD = `Port %d
ListenAddress 127.0.0.1
HostKey %s/ed25519
HostKey %s/rsa
UsePAM no
PermitRootLogin no
PasswordAuthentication no
KbdInteractiveAuthentication no
Ciphers aes128-ctr,aes256-ctr,aes128-cbc
KexAlgorithms curve25519-sha256,ecdh-sha2-nistp256,diffie-hellman-group14-sha1
MACs hmac-sha2-256,hmac-sha1

Match User x
	PasswordAuthentication yes
`

func TestLiveSSHDWeak(t *testing.T) {
	p, conf, port := startSSHD(t, [][]string{{"ed25519", "-t", "ed25519"}, {"rsa", "-t", "rsa", "-b", "2048"}},
		func(dir string, port int) string { return fmt.Sprintf(weakSSHD, port, dir, dir) })
	f := collectLive(t)
	d := daemonOf(t, f, p.Cmd.Process.Pid)
	listen := "127.0.0.1:" + strconv.Itoa(port)

	if d.Source != "process" || d.ConfigPath != conf || !slices.Equal(d.Listen, []string{listen}) {
		t.Errorf("daemon source %q config %q listen %v, want process, %s, %s", d.Source, d.ConfigPath, d.Listen, conf, listen)
	}
	if len(d.Match) != 1 || d.Match[0].Criteria != "User x" || d.Match[0].Line != 13 || d.Match[0].File != conf ||
		len(d.Match[0].Settings) != 1 || d.Match[0].Settings[0] != (facts.SSHSetting{Keyword: "passwordauthentication", Value: "yes", File: conf, Line: 14}) {
		t.Errorf("match = %+v", d.Match)
	}

	// The effective settings agree with sshd's own view of the same file,
	// outside the Match and under it.
	eff := sshdT(t, conf)
	for field, got := range map[string]string{
		"ciphers": join(d.Ciphers), "kexalgorithms": join(d.KexAlgorithms), "macs": join(d.MACs),
		"passwordauthentication": d.PasswordAuthentication, "permitrootlogin": d.PermitRootLogin,
		"kbdinteractiveauthentication": d.KbdInteractiveAuthentication,
	} {
		if eff[field] != got {
			t.Errorf("%s: facts %q, sshd -T %q", field, got, eff[field])
		}
	}
	if m := sshdT(t, conf, "-C", "user=x,host=h,addr=127.0.0.1"); m["passwordauthentication"] != d.Match[0].Settings[0].Value {
		t.Errorf("sshd -T -C user=x: passwordauthentication %q, the Match block says %q", m["passwordauthentication"], d.Match[0].Settings[0].Value)
	}

	// The wire: the daemon offers what its file says, and ssh-audit reads
	// the same lists.
	if len(d.Wire) != 1 || d.Wire[0].Error != "" {
		t.Fatalf("wire = %+v", d.Wire)
	}
	w := d.Wire[0]
	if w.Address != listen || w.Source != "wire" || !strings.HasPrefix(w.Version, "SSH-2.0-OpenSSH_") ||
		join(w.Ciphers) != "aes128-ctr,aes256-ctr,aes128-cbc" || join(w.KexAlgorithms) != "curve25519-sha256,ecdh-sha2-nistp256,diffie-hellman-group14-sha1" ||
		join(w.MACs) != "hmac-sha2-256,hmac-sha1" {
		t.Errorf("wire = %+v", w)
	}
	compareSSHAudit(t, port, w)

	var rsaWire *facts.SSHHostKey
	for i, k := range d.HostKeys {
		if k.Source == "wire" && k.Type == "ssh-rsa" {
			rsaWire = &d.HostKeys[i]
		}
	}
	if rsaWire == nil || rsaWire.Bits != 2048 || rsaWire.Address != listen || !strings.HasPrefix(rsaWire.Fingerprint, "SHA256:") {
		t.Errorf("host keys = %+v, want the 2048-bit RSA key read off the wire", d.HostKeys)
	}

	got := evaluate(t, f, d)
	name := fmt.Sprintf("sshd pid %d (%s; %s)", d.PID, listen, conf)
	want := map[string]string{
		"GH-SSH-002": name + ": Match User x (" + conf + ":13) turns PasswordAuthentication back to \"yes\" at " + conf + ":14; want no",
		"GH-SSH-004": name + " offers weak cipher aes128-cbc on the wire at " + listen,
		"GH-SSH-005": name + " offers weak key exchange algorithm diffie-hellman-group14-sha1 on the wire at " + listen,
		"GH-SSH-006": name + " offers weak MAC hmac-sha1 on the wire at " + listen,
		"GH-SSH-008": name + " offers discouraged key exchange ecdh-sha2-nistp256 on the wire at " + listen,
		"GH-SSH-009": name + " has an RSA host key of 2048 bits on the wire at " + listen + "; want at least 3072",
	}
	for id, msg := range want {
		if got[id].Status != "fail" || !slices.Contains(got[id].Messages, msg) {
			t.Errorf("%s: %s %q, want fail with %q", id, got[id].Status, got[id].Messages, msg)
		}
	}
	if r := got["GH-SSH-007"]; r.Status != "pass" {
		t.Errorf("GH-SSH-007 before any edit: %s %q", r.Status, r.Messages)
	}

	// An edit without a reload: the file now says something the daemon
	// does not offer. The start time is known to whole seconds, so the
	// edit waits until it is plainly after it.
	if started, err := time.Parse(time.RFC3339Nano, d.StartedAt); err == nil {
		time.Sleep(time.Until(started.Add(2 * time.Second)))
	}
	edited := strings.Replace(fmt.Sprintf(weakSSHD, port, filepath.Dir(conf), filepath.Dir(conf)), "Ciphers aes128-ctr,aes256-ctr,aes128-cbc", "Ciphers aes256-gcm@openssh.com", 1)
	if err := os.WriteFile(conf, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	f = collectLive(t)
	d = daemonOf(t, f, p.Cmd.Process.Pid)
	drift := name + ": Ciphers in " + conf + " differ from what it offers on the wire at " + listen +
		": only in the file [aes256-gcm@openssh.com], only on the wire [aes128-cbc, aes128-ctr, aes256-ctr]; reload it or restore the file"
	// With PidFile none the start time is all the scan has, and the edit
	// came well after it.
	if !d.ConfigNewer || d.LoadedFrom != "process_start" || d.LoadedAt != d.StartedAt {
		t.Errorf("age after the edit = %+v", d.SSHDaemonAge)
	}
	stale := name + " runs an older configuration than " + conf + " (modified at " + d.NewestConfigModified + ", after the daemon started at " + d.StartedAt +
		"): reload it (systemctl reload ssh); it has no PidFile naming it, so a reload does not show here and only a restart clears this"
	if r := evaluate(t, f, d)["GH-SSH-007"]; r.Status != "fail" || !slices.Equal(r.Messages, []string{stale, drift}) {
		t.Errorf("GH-SSH-007 after the edit: %s %q, want %q", r.Status, r.Messages, []string{stale, drift})
	}
}

const hardenedSSHD = `Port %d
ListenAddress 127.0.0.1
HostKey %s/ed25519
UsePAM no
PermitRootLogin no
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitEmptyPasswords no
Ciphers chacha20-poly1305@openssh.com,aes256-gcm@openssh.com
KexAlgorithms sntrup761x25519-sha512@openssh.com,curve25519-sha256
MACs hmac-sha2-512-etm@openssh.com,hmac-sha2-256-etm@openssh.com
HostKeyAlgorithms ssh-ed25519
MaxAuthTries 4
ClientAliveInterval 300
`

func TestLiveSSHDHardened(t *testing.T) {
	p, conf, port := startSSHD(t, [][]string{{"ed25519", "-t", "ed25519"}},
		func(dir string, port int) string { return fmt.Sprintf(hardenedSSHD, port, dir) })
	f := collectLive(t)
	d := daemonOf(t, f, p.Cmd.Process.Pid)
	if len(d.Match) != 0 || len(d.Wire) != 1 || d.Wire[0].Error != "" || join(d.Wire[0].HostKeyAlgorithms) != "ssh-ed25519" {
		t.Fatalf("daemon = %+v", d)
	}
	eff := sshdT(t, conf)
	if eff["ciphers"] != join(d.Wire[0].Ciphers) || eff["macs"] != join(d.Wire[0].MACs) {
		t.Errorf("wire ciphers %v macs %v, sshd -T %q %q", d.Wire[0].Ciphers, d.Wire[0].MACs, eff["ciphers"], eff["macs"])
	}
	compareSSHAudit(t, port, d.Wire[0])
	// The options GH-SSH-011 judges are what sshd -T says sshd runs with.
	for k := range ssh.SSHOptionDefaults {
		if !strings.EqualFold(d.Options[k], eff[k]) {
			t.Errorf("option %s: collected %q, sshd -T %q", k, d.Options[k], eff[k])
		}
	}
	for id, r := range evaluate(t, f, d) {
		// GH-SSH-010 judges images only: a live host has keys of its own.
		if r.Status != "pass" && !(id == "GH-SSH-010" && r.Status == "skip") {
			t.Errorf("%s: %s %q on a hardened sshd", id, r.Status, r.Messages)
		}
	}
}

// evaluate runs the default pack over f with ssh narrowed to daemon d and
// returns the ssh checks' results by id.
func evaluate(t *testing.T, f *facts.Facts, d facts.SSHDaemon) map[string]reportsResult {
	t.Helper()
	one := *f
	narrowed := *f.SSH
	narrowed.Daemons = []facts.SSHDaemon{d}
	one.SSH = &narrowed
	ctx := context.Background()
	src, err := engine.LoadFS(policies.FS, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(ctx, engine.WithSource(src))
	if err != nil {
		t.Fatal(err)
	}
	doc, _, err := engine.NewDocument(&one)
	if err != nil {
		t.Fatal(err)
	}
	results, err := e.Evaluate(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]reportsResult{}
	for _, r := range results {
		if strings.HasPrefix(r.ID, "GH-SSH-") {
			out[r.ID] = reportsResult{Status: r.Status, Messages: r.Messages}
		}
	}
	if len(out) < 9 {
		t.Fatalf("ssh results %+v, want GH-SSH-001..009", out)
	}
	return out
}

type reportsResult struct {
	Status   string
	Messages []string
}

// compareSSHAudit runs ssh-audit against the port and compares its lists
// with what the probe read.
func compareSSHAudit(t *testing.T, port int, w facts.SSHWire) {
	t.Helper()
	audit := testutil.Tool(t, "ssh-audit", "ssh-audit")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// ssh-audit exits non-zero when it finds something to warn about.
	out, _ := exec.CommandContext(ctx, audit, "-j", "-p", strconv.Itoa(port), "127.0.0.1").Output()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("ssh-audit -j: %v\n%s", err, out)
	}
	for key, want := range map[string][]string{"kex": w.KexAlgorithms, "enc": w.Ciphers, "mac": w.MACs, "key": w.HostKeyAlgorithms} {
		got := auditNames(t, doc[key])
		got = slices.DeleteFunc(got, func(n string) bool {
			return strings.HasPrefix(n, "ext-info-") || strings.HasPrefix(n, "kex-strict-")
		})
		if key == "key" {
			// ssh-audit lists a key once per algorithm and may add the
			// certificate forms; compare the sets.
			slices.Sort(got)
			got = slices.Compact(got)
			want = slices.Sorted(slices.Values(want))
		}
		if !slices.Equal(got, want) {
			t.Errorf("ssh-audit %s = %v, probe read %v", key, got, want)
		}
	}
}

// auditNames reads an ssh-audit list, whose entries are names or objects
// with an "algorithm".
func auditNames(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		t.Fatalf("ssh-audit list %s: %v", raw, err)
	}
	names := []string{}
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			names = append(names, s)
			continue
		}
		var o struct {
			Algorithm string `json:"algorithm"`
		}
		if err := json.Unmarshal(it, &o); err != nil {
			t.Fatalf("ssh-audit entry %s: %v", it, err)
		}
		names = append(names, o.Algorithm)
	}
	return names
}

// passwordsSSHD lets passwords in: the daemons below must be found and
// judged whatever they are called and whoever owns their socket.
const passwordsSSHD = `Port %d
ListenAddress 127.0.0.1
HostKey %s/ed25519
UsePAM no
PasswordAuthentication yes
KbdInteractiveAuthentication no
`

// Issue 48: an sshd not plainly called sshd is still an sshd. A renamed
// binary is found by OpenSSH's banner and judged by its own command line;
// a socket that systemd-socket-activate owns, starting "sshd -i -f FILE"
// per connection (--accept, as ssh.socket's Accept=yes), is judged by the
// file that command line names.
func TestLiveSSHDRenamedAndSocketActivated(t *testing.T) {
	testutil.Root(t)
	sshd := testutil.Tool(t, "sshd", "openssh-server")
	keygen := testutil.Tool(t, "ssh-keygen", "openssh-client")
	unshare := testutil.Tool(t, "unshare", "util-linux")
	activate := testutil.Tool(t, "systemd-socket-activate", "systemd")
	dir := t.TempDir()
	testutil.Run(t, 30*time.Second, keygen, "-q", "-N", "", "-t", "ed25519", "-f", filepath.Join(dir, "ed25519"))
	renamed := filepath.Join(dir, "ssh-gateway")
	data, err := os.ReadFile(sshd)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(renamed, data, 0o755); err != nil {
		t.Fatal(err)
	}
	portA, portB := testutil.FreePort(t), testutil.FreePort(t)
	confA, confB := filepath.Join(dir, "a_config"), filepath.Join(dir, "b_config")
	for conf, port := range map[string]int{confA: portA, confB: portB} {
		if err := os.WriteFile(conf, []byte(fmt.Sprintf(passwordsSSHD, port, dir)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a := testutil.Start(t, exec.Command(unshare, withPrivateRun(t, renamed, "-D", "-e", "-f", confA)...))
	a.WaitLine(t, 20*time.Second, "Server listening on 127.0.0.1 port "+strconv.Itoa(portA))
	listenB := "127.0.0.1:" + strconv.Itoa(portB)
	b := testutil.Start(t, exec.Command(unshare, withPrivateRun(t, activate, "--accept", "--inetd", "-l", listenB, sshd, "-i", "-e", "-f", confB)...))
	b.WaitLine(t, 20*time.Second, "Listening on "+listenB)

	f := collectLive(t)
	da, db := daemonOf(t, f, a.Cmd.Process.Pid), daemonOf(t, f, b.Cmd.Process.Pid)
	if da.Source != "process" || da.ConfigPath != confA || da.PasswordAuthentication != "yes" || da.StartedAt == "" {
		t.Errorf("renamed sshd: %+v", da)
	}
	if db.Source != "socket" || db.ConfigPath != confB || db.PasswordAuthentication != "yes" || db.StartedAt != "" ||
		len(db.Wire) != 1 || db.Wire[0].Error != "" || !slices.Contains(db.Wire[0].AuthMethods, "password") {
		t.Errorf("socket-activated sshd: %+v", db)
	}
	got := evaluate(t, f, da)
	if r := got["GH-SSH-002"]; r.Status != "fail" || !strings.Contains(strings.Join(r.Messages, "|"), fmt.Sprintf("sshd pid %d (127.0.0.1:%d; %s): PasswordAuthentication is \"yes\"", da.PID, portA, confA)) {
		t.Errorf("GH-SSH-002 on the renamed sshd: %s %q", r.Status, r.Messages)
	}
	got = evaluate(t, f, db)
	if r := got["GH-SSH-002"]; r.Status != "fail" || !strings.Contains(strings.Join(r.Messages, "|"), fmt.Sprintf("(%s; %s): PasswordAuthentication is \"yes\"", listenB, confB)) {
		t.Errorf("GH-SSH-002 on the socket-activated sshd: %s %q", r.Status, r.Messages)
	}
}
