package gpu

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/gpuhost/gpuhost/builder/internal/configerr"
	"github.com/gpuhost/gpuhost/facts/access"
	"github.com/gpuhost/gpuhost/facts/audit"
	"github.com/gpuhost/gpuhost/facts/network"
	sshcheck "github.com/gpuhost/gpuhost/facts/ssh"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	tlscheck "github.com/gpuhost/gpuhost/facts/tls"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/policies"
)

// debianBase is the smallest configuration the hardening cases build on.
const debianBase = `"driver": {"version": "535.261.03-1", "source": "debian"}, "distro": {"id": "debian", "version_id": "12", "codename": "bookworm"}`

func decodeHardening(t *testing.T, hardening string) *Config {
	t.Helper()
	cfg, err := DecodeJSON([]byte(`{` + debianBase + `, "hardening": ` + hardening + `}`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// An empty hardening block is the whole hardening, with the defaults the
// field docs promise; without the block nothing is hardened.
func TestHardeningDefaults(t *testing.T) {
	cfg := decodeHardening(t, `{}`)
	h := cfg.Hardening
	if !cfg.DisableUnattendedUpgrades.True() {
		t.Error("hardening with pinned packages must mask unattended-upgrades")
	}
	for _, c := range []struct {
		field     string
		got, want any
	}{
		{"roles.admin", h.Roles.Admin, []string{"gpuhost-admin"}},
		{"roles.developer", h.Roles.Developer, []string{"gpuhost-dev"}},
		{"roles.auditor", h.Roles.Auditor, []string{"gpuhost-audit"}},
		{"tls.min_protocol", h.TLS.MinProtocol, "TLSv1.3"},
		{"ssh.permit_root_login", h.SSH.PermitRootLogin, "no"},
		{"ssh.ciphers", h.SSH.Ciphers, defaultSSHCiphers},
		{"ssh.allow_groups", h.SSH.AllowGroups, []string{"gpuhost-admin", "gpuhost-dev", "gpuhost-audit"}},
		{"ssh.mfa_groups", h.SSH.MFAGroups, []string{"gpuhost-admin"}},
		{"ssh.second_factor", h.SSH.SecondFactor, SecondFactorTOTP},
		{"ssh.host_keys", h.SSH.HostKeys, HostKeysFirstBoot},
		{"firewall.allowed_tcp_ports", h.Firewall.AllowedTCPPorts, []int{22}},
		{"firewall.allow_icmp", h.Firewall.AllowICMP.True(), true},
		{"audit.record_commands", h.Audit.RecordCommands.True(), true},
		{"audit.max_log_file_action", h.Audit.MaxLogFileAction, "keep_logs"},
		{"sudo.use_pty", h.Sudo.UsePTY.True(), true},
		{"sudo.log_file", h.Sudo.LogFile, "/var/log/sudo.log"},
		{"sudo.revoke_groups", h.Sudo.RevokeGroups, []string{"sudo", "admin"}},
		{"journald.storage", h.Journald.Storage, "persistent"},
	} {
		if !equalAny(c.got, c.want) {
			t.Errorf("hardening.%s = %v, want %v", c.field, c.got, c.want)
		}
	}
	// The watched paths and tools are the default pack's, so the gate and
	// the component cannot drift apart.
	var params struct {
		WatchPaths []string `yaml:"audit_watch_paths"`
		GPUTools   []string `yaml:"audit_gpu_tools"`
	}
	data, err := policies.DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &params); err != nil {
		t.Fatal(err)
	}
	if len(params.WatchPaths) == 0 || !slices.Equal(h.Audit.WatchPaths, params.WatchPaths) {
		t.Errorf("audit.watch_paths = %v, want the default params' %v", h.Audit.WatchPaths, params.WatchPaths)
	}
	if len(params.GPUTools) == 0 || !slices.Equal(h.Audit.ExecPaths, params.GPUTools) {
		t.Errorf("audit.exec_paths = %v, want the default params' %v", h.Audit.ExecPaths, params.GPUTools)
	}

	plain, err := DecodeJSON([]byte(`{` + debianBase + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Hardening != nil || plain.DisableUnattendedUpgrades.True() {
		t.Error("without a hardening block the provisioner must harden nothing")
	}
	plan, err := RenderPlan(*plain)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, "hardening") {
		t.Error("a plan without hardening mentions it")
	}
	// An explicit choice stays: the gate judges it.
	off, err := DecodeJSON([]byte(`{` + debianBase + `, "disable_unattended_upgrades": false, "hardening": {}}`))
	if err != nil || off.DisableUnattendedUpgrades.True() {
		t.Errorf("disable_unattended_upgrades = false was not kept: %v", err)
	}
}

func equalAny(a, b any) bool {
	switch x := a.(type) {
	case []string:
		return slices.Equal(x, b.([]string))
	case []int:
		return slices.Equal(x, b.([]int))
	}
	return a == b
}

// Every problem of a bad hardening block is reported at once, each naming
// its field, as every component reports its configuration.
func TestHardeningRejectsEveryProblem(t *testing.T) {
	_, err := DecodeJSON([]byte(`{` + debianBase + `, "hardening": {
		"hostname": "Build_Host",
		"roles": {"admin": ["ops", "Bad Group"], "developer": ["ops"], "auditor": []},
		"tls": {"min_protocol": "TLSv1.1", "cipher_string": "ALL; rm -rf /"},
		"ssh": {"permit_root_login": "yes", "ciphers": ["aes128-cbc", "aes512-gcm@openssh.com", "aes256-gcm@openssh.com", "aes256-gcm@openssh.com"],
			"kex_algorithms": ["diffie-hellman-group14-sha1"], "macs": [], "host_key_algorithms": ["ssh-rsa"],
			"allow_groups": ["ops", "users"], "mfa_groups": ["wheel"], "second_factor": "sms",
			"max_auth_tries": 50, "log_level": "DEBUG3", "host_keys": "shared"},
		"firewall": {"allowed_tcp_ports": [22, 0, 70000, 22], "allowed_udp_ports": [-1]},
		"audit": {"watch_paths": ["/etc/ssh", "etc/sudoers", "/etc/../shadow"], "exec_paths": ["/usr/bin/nvidia smi"],
			"max_log_file_action": "delete", "disk_full_action": "email"},
		"sudo": {"log_file": "sudo.log", "revoke_groups": ["ops", "%sudo"]},
		"journald": {"storage": "none", "system_max_use": "lots"},
		"baseline": {"login_defs": {"pass_max_days": "365", "UMASK": "027; reboot"},
			"sysctl": {"kernel": "1", "net.ipv4.ip_forward": "$(id)", "fs.suid_dumpable": "2"},
			"disabled_modules": ["usb storage", "dccp", "dccp"]}
	}}`))
	var ce *configerr.Error
	if !errors.As(err, &ce) || ce.Component != "gpuhost-gpu" {
		t.Fatalf("err = %v, want a gpuhost-gpu *configerr.Error", err)
	}
	msg := err.Error()
	for _, want := range []string{
		`hardening.hostname: "Build_Host" is not a host name`,
		`hardening.roles.admin[1]: "Bad Group" is not a group name`,
		`hardening.roles.developer: ops already holds the admin role`,
		`hardening.tls.min_protocol: "TLSv1.1" is not one of TLSv1.3, TLSv1.2`,
		`hardening.tls.cipher_string: "ALL; rm -rf /" is not an OpenSSL cipher string`,
		`hardening.ssh.permit_root_login: yes lets root log in with a password`,
		`hardening.ssh.ciphers[0]: aes128-cbc is weak`,
		`hardening.ssh.ciphers[1]: "aes512-gcm@openssh.com" is not an algorithm OpenSSH knows`,
		`hardening.ssh.ciphers[3]: aes256-gcm@openssh.com is listed twice`,
		`hardening.ssh.kex_algorithms[0]: diffie-hellman-group14-sha1 is weak`,
		`hardening.ssh.macs: empty`,
		`hardening.ssh.host_key_algorithms[0]: ssh-rsa is weak`,
		`hardening.ssh.allow_groups[1]: "users" is not a role group`,
		`hardening.ssh.mfa_groups[0]: "wheel" is not in allow_groups`,
		`hardening.ssh.second_factor: "sms" is not one of totp, none`,
		`hardening.ssh.max_auth_tries: 50 is outside 1-10`,
		`hardening.ssh.log_level: "DEBUG3" is not one of VERBOSE, INFO`,
		`hardening.ssh.host_keys: "shared" is not one of first_boot, keep`,
		`hardening.firewall.allowed_tcp_ports[1]: 0 is not a port`,
		`hardening.firewall.allowed_tcp_ports[2]: 70000 is not a port`,
		`hardening.firewall.allowed_tcp_ports[3]: 22 is listed twice`,
		`hardening.firewall.allowed_udp_ports[0]: -1 is not a port`,
		`hardening.audit.watch_paths[1]: "etc/sudoers" is not a clean absolute path`,
		`hardening.audit.watch_paths[2]: "/etc/../shadow" is not a clean absolute path`,
		`hardening.audit.exec_paths[0]: "/usr/bin/nvidia smi" is not a clean absolute path`,
		`hardening.audit.max_log_file_action: "delete" is not one of`,
		`hardening.audit.disk_full_action: "email" is not one of`,
		`hardening.sudo.log_file: "sudo.log" is not a clean absolute path`,
		`hardening.sudo.revoke_groups[0]: ops is an admin group`,
		`hardening.sudo.revoke_groups[1]: "%sudo" is not a group name`,
		`hardening.journald.storage: "none" is not one of persistent, auto, volatile`,
		`hardening.journald.system_max_use: "lots" is not a size`,
		`hardening.baseline.login_defs: "pass_max_days" is not a login.defs keyword`,
		`hardening.baseline.login_defs.UMASK: "027; reboot" is not a plain value`,
		`hardening.baseline.sysctl: "kernel" is not a kernel parameter`,
		`hardening.baseline.sysctl.net.ipv4.ip_forward: "$(id)" is not a plain value`,
		`hardening.baseline.sysctl.fs.suid_dumpable: "2" lets setuid programs dump core`,
		`hardening.baseline.disabled_modules[0]: "usb storage" is not a kernel module name`,
		`hardening.baseline.disabled_modules[2]: dccp is listed twice`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	for _, p := range ce.Problems {
		if !strings.HasPrefix(p, "hardening.") {
			t.Errorf("%q does not name its hardening field", p)
		}
	}
	if _, err := DecodeJSON([]byte(`{` + debianBase + `, "hardening": {"roles": {"admin": []}}}`)); err == nil || !strings.Contains(err.Error(), "hardening.roles.admin: at least one group") {
		t.Errorf("no admin group: err = %v", err)
	}
	if _, err := DecodeJSON([]byte(`{` + debianBase + `, "hardening": {"ssh": {"cipher": ["aes256-gcm@openssh.com"]}}}`)); err == nil {
		t.Error("a misspelt hardening field was accepted")
	}
}

// A part left out with skip writes nothing, installs nothing, and is not
// validated.
func TestHardeningSkip(t *testing.T) {
	cfg := decodeHardening(t, `{"tls": {"skip": true, "min_protocol": "SSLv3"}, "ssh": {"skip": true}, "firewall": {"skip": true},
		"audit": {"skip": true}, "sudo": {"skip": true}, "journald": {"skip": true},
		"baseline": {"skip": true, "disabled_modules": ["not a module"]}}`)
	plan, err := RenderPlan(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"openssl.cnf", "sshd", "nft", "auditd", "visudo", "journald", "openssh-server", "login.defs", "60-gpuhost.conf", "baseline_file"} {
		if strings.Contains(plan, absent) {
			t.Errorf("with every part skipped the plan still mentions %s", absent)
		}
	}
	if !strings.Contains(plan, `step "hardening: role groups"`) {
		t.Error("the role groups are not created")
	}
}

// The files the hardening writes read, to the parsers the collectors use,
// as what the checks want: sshd keys only with strong algorithms and a
// second factor for admins, even beside a drop-in that turns passwords on;
// default-drop input; sudo for admins alone, on a pty, logged; audit rules
// recording what the default params ask.
func TestHardeningFilesReadAsTheChecksWant(t *testing.T) {
	h := decodeHardening(t, `{}`).Hardening
	p := h.plan()

	root := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		f := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Debian's sshd_config reads the drop-ins first; a cloud image's
	// drop-in sorts after ours.
	write("/etc/ssh/sshd_config", "Include /etc/ssh/sshd_config.d/*.conf\nKbdInteractiveAuthentication no\nUsePAM yes\nX11Forwarding yes\n")
	write("/etc/ssh/sshd_config.d/50-cloud-init.conf", "PasswordAuthentication yes\nPermitRootLogin yes\n")
	write(SSHDropIn, p.SSHD)
	fsys, closer, err := sysroot.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	sshd, err := sshcheck.LoadSSHD(fsys, "/etc/ssh/sshd_config")
	if err != nil {
		t.Fatal(err)
	}
	s := sshd.Settings("/etc/ssh/sshd_config")
	if s.PermitRootLogin != "no" || s.PasswordAuthentication != "no" || s.KbdInteractiveAuthentication != "no" || s.PermitEmptyPasswords != "no" || s.UsePAM != "yes" {
		t.Errorf("sshd settings %+v; want root, passwords and keyboard-interactive off, PAM on", s)
	}
	if !slices.Equal(s.Ciphers, h.SSH.Ciphers) || !slices.Equal(s.KexAlgorithms, h.SSH.KexAlgorithms) || !slices.Equal(s.MACs, h.SSH.MACs) || !slices.Equal(s.HostKeyAlgorithms, h.SSH.HostKeyAlgorithms) {
		t.Errorf("sshd algorithms %v %v %v %v", s.Ciphers, s.KexAlgorithms, s.MACs, s.HostKeyAlgorithms)
	}
	if !slices.Equal(s.AllowGroups, []string{"gpuhost-admin", "gpuhost-dev", "gpuhost-audit"}) {
		t.Errorf("AllowGroups %v", s.AllowGroups)
	}
	if len(s.Match) != 1 || s.Match[0].Criteria != "Group gpuhost-admin" {
		t.Fatalf("Match blocks %+v; want one for the admins", s.Match)
	}
	got := map[string]string{}
	for _, m := range s.Match[0].Settings {
		got[m.Keyword] = m.Value
	}
	if got["authenticationmethods"] != "publickey,keyboard-interactive" || got["kbdinteractiveauthentication"] != "yes" {
		t.Errorf("admin Match settings %v", got)
	}

	policy, ports, hasInput, err := network.ParseNftables([]byte(p.Nftables))
	if err != nil || !hasInput || policy != "drop" || !slices.Equal(ports, []int{22}) {
		t.Errorf("nftables: input %v, policy %q, ports %v, err %v; want drop with 22 open", hasInput, policy, ports, err)
	}

	sudo, err := access.ParseSudoers(SudoersDropIn, []byte(p.Sudoers))
	if err != nil {
		t.Fatal(err)
	}
	if len(sudo.Rules) != 1 || !slices.Equal(sudo.Rules[0].Users, []string{"%gpuhost-admin"}) || !sudo.Rules[0].AllCommands || sudo.Rules[0].NoPasswd {
		t.Errorf("sudo rules %+v; want ALL for %%gpuhost-admin, with a password", sudo.Rules)
	}
	var defaults []string
	for _, d := range sudo.Defaults {
		defaults = append(defaults, d.Name)
	}
	if !slices.Contains(defaults, "use_pty") || !slices.Contains(defaults, "logfile") {
		t.Errorf("sudo defaults %v; want use_pty and logfile", defaults)
	}

	rules, err := audit.ParseRules(AuditRulesFile, []byte(p.AuditRules))
	if err != nil {
		t.Fatal(err)
	}
	watched := map[string]string{}
	execs := map[string]bool{}
	for _, r := range rules {
		if r.Kind == "watch" {
			watched[r.Path] = r.Perms
		}
		if r.Kind == "syscall" && slices.Contains(r.Syscalls, "execve") {
			for _, f := range r.Fields {
				if f.Name == "euid" || f.Name == "auid" {
					execs[r.Arch+" "+f.Name] = true
				}
			}
		}
	}
	for _, path := range h.Audit.WatchPaths {
		if !strings.Contains(watched[path], "w") || !strings.Contains(watched[path], "a") {
			t.Errorf("%s is not watched for writes and attribute changes (perms %q)", path, watched[path])
		}
	}
	for _, path := range h.Audit.ExecPaths {
		if !strings.Contains(watched[path], "x") {
			t.Errorf("%s is not watched for execution", path)
		}
	}
	for _, k := range []string{"b64 euid", "b32 euid", "b64 auid", "b32 auid"} {
		if !execs[k] {
			t.Errorf("no execve rule for %s", k)
		}
	}
	conf, err := audit.ParseKeyValues("auditd.conf", []byte(strings.Join(func() []string {
		var l []string
		for _, kv := range p.AuditConf {
			l = append(l, kv.Key+" = "+kv.Value)
		}
		return l
	}(), "\n")))
	if err != nil || conf["max_log_file_action"].Value != "keep_logs" || conf["disk_full_action"].Value != "halt" {
		t.Errorf("auditd.conf settings %v, %v", conf, err)
	}
}

// The openssl step, run as the plan runs it against the openssl.cnf of
// Debian 12, of Ubuntu (which has its own system_default) and of one
// without openssl_conf, and run twice: the collector then reads MinProtocol
// TLSv1.3, and the openssl client really refuses a TLS 1.2 server while it
// talks to a TLS 1.3 one. The step sees the test's files at /etc/ssl
// through a mount namespace.
func TestHardeningOpenSSLStep(t *testing.T) {
	testutil.Root(t)
	unshare := testutil.Tool(t, "unshare", "util-linux")
	openssl := testutil.Tool(t, "openssl", "openssl")
	step := testutil.PlanStep(t, renderCase(t, "debian-12-debian-535"), "hardening: openssl")

	tls12, tls13 := tlsServer(t, tls.VersionTLS12), tlsServer(t, tls.VersionTLS13)
	for _, c := range []struct{ name, cnf string }{
		{"debian-12", "HOME = .\nopenssl_conf = openssl_init\nconfig_diagnostics = 1\n[ new_oids ]\ntsa_policy1 = 1.2.3.4.1\n[openssl_init]\n[ ca ]\ndefault_ca = CA_default\n"},
		{"ubuntu", "HOME = .\nopenssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\nssl_conf = ssl_sect\n[provider_sect]\ndefault = default_sect\n[default_sect]\nactivate = 1\n[ssl_sect]\nsystem_default = system_default_sect\n[system_default_sect]\nMinProtocol = TLSv1.2\nCipherString = DEFAULT:@SECLEVEL=2\n"},
		{"no-openssl_conf", "HOME = .\n[ ca ]\ndefault_ca = CA_default\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			ssl := filepath.Join(root, "etc", "ssl")
			if err := os.MkdirAll(ssl, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ssl, "openssl.cnf"), []byte(c.cnf), 0o644); err != nil {
				t.Fatal(err)
			}
			script := `set -eu
die() { echo "die: $*" >&2; exit 1; }
mount --make-rprivate /
mount --bind "$1" /etc/ssl
` + step + step + `
for a in "$3" "$4"; do
	if "$2" s_client -connect "$a" -servername localhost </dev/null >/dev/null 2>&1; then echo "$a ok"; else echo "$a refused"; fi
done`
			out := testutil.Run(t, time.Minute, unshare, "--mount", "/bin/sh", "-c", script, "sh", ssl, openssl, tls12, tls13)
			if want := tls12 + " refused\n" + tls13 + " ok\n"; !strings.HasSuffix(out, want) {
				t.Errorf("openssl s_client under the edited configuration:\n%s\nwant TLS 1.2 refused and TLS 1.3 accepted", out)
			}
			data, err := os.ReadFile(filepath.Join(ssl, "openssl.cnf"))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(data), ".include "+OpenSSLInclude); n != 1 {
				t.Errorf("openssl.cnf includes the hardening %d times after two runs:\n%s", n, data)
			}
			fsys, closer, err := sysroot.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			cfg, err := tlscheck.LoadOpenSSL(fsys, "/etc/ssl/openssl.cnf")
			if err != nil {
				t.Fatal(err)
			}
			if sd := cfg.SystemDefault(); sd.MinProtocol != "TLSv1.3" || sd.MinProtocolAt.File != OpenSSLInclude {
				t.Errorf("system_default %+v; want MinProtocol TLSv1.3 from %s", sd, OpenSSLInclude)
			}
		})
	}
}

// tlsServer serves TLS at exactly version on loopback and returns its
// address; the handshake is all a client gets.
func tlsServer(t *testing.T, version uint16) string {
	t.Helper()
	_, _, pair := testutil.WriteCert(t, t.TempDir(), testutil.CertSpec{DNS: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: version, MaxVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				_ = c.(*tls.Conn).Handshake()
			}()
		}
	}()
	return l.Addr().String()
}

// sshd itself, given the drop-in beside sshd_config's own settings and a
// cloud image's drop-in that turns passwords and root logins back on,
// reports the effective configuration the plan's sshd step requires.
func TestHardeningSSHDEffective(t *testing.T) {
	testutil.Root(t)
	unshare := testutil.Tool(t, "unshare", "util-linux")
	sshd := testutil.Tool(t, "sshd", "openssh-server")
	keygen := testutil.Tool(t, "ssh-keygen", "openssh-client")
	for _, hardening := range []string{`{}`, `{"ssh": {"second_factor": "none", "ciphers": ["aes256-gcm@openssh.com"], "x11_forwarding": true, "log_level": "INFO", "permit_root_login": "prohibit-password"}}`} {
		h := decodeHardening(t, hardening).Hardening
		p := h.plan()
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "sshd_config.d"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string]string{
			"sshd_config":                      "Include " + dir + "/sshd_config.d/*.conf\nKbdInteractiveAuthentication no\nUsePAM yes\nX11Forwarding yes\nPrintMotd no\n",
			"sshd_config.d/00-gpuhost.conf":    p.SSHD,
			"sshd_config.d/50-cloud-init.conf": "PasswordAuthentication yes\nPermitRootLogin yes\nCiphers aes128-cbc\n",
		} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		key := filepath.Join(dir, "hostkey")
		testutil.Run(t, time.Minute, keygen, "-q", "-t", "ed25519", "-N", "", "-f", key)
		// sshd -T wants its privilege separation directory; a private /run
		// gives it one without touching the machine's.
		out := testutil.Run(t, time.Minute, unshare, "--mount", "/bin/sh", "-c",
			`mount --make-rprivate / && mount -t tmpfs tmpfs /run && mkdir /run/sshd && exec "$1" -T -f "$2" -h "$3"`,
			"sh", sshd, filepath.Join(dir, "sshd_config"), key)
		have := strings.Split(out, "\n")
		for _, want := range p.SSHDExpect {
			if !slices.Contains(have, want) {
				t.Errorf("%s: sshd -T lacks %q", hardening, want)
			}
		}
	}
}

// nft loads each rendered ruleset, in a network namespace of its own and
// without /etc/protocols or /etc/services (a minbase image has neither),
// and the kernel then holds a default-drop input chain with exactly the
// configured ports open.
func TestHardeningNftablesLoads(t *testing.T) {
	testutil.Root(t)
	nft := testutil.Tool(t, "nft", "nftables")
	unshare := testutil.Tool(t, "unshare", "util-linux")
	for _, c := range []struct {
		hardening string
		ports     []int
	}{
		{`{}`, []int{22}},
		{`{"firewall": {"allowed_tcp_ports": [22, 9108], "allowed_udp_ports": [4789], "allow_icmp": false}}`, []int{22, 9108, 4789}},
	} {
		p := decodeHardening(t, c.hardening).Hardening.plan()
		dir := t.TempDir()
		conf, empty := filepath.Join(dir, "nftables.conf"), filepath.Join(dir, "empty")
		if err := os.WriteFile(conf, []byte(p.Nftables), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(empty, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		script := `set -e
mount --make-rprivate /
for f in /etc/protocols /etc/services; do if [ -e "$f" ]; then mount --bind "$1" "$f"; fi; done
"$2" -c -f "$3"
"$2" -f "$3"
"$2" list ruleset`
		out := testutil.Run(t, time.Minute, unshare, "--net", "--mount", "/bin/sh", "-c", script, "sh", empty, nft, conf)
		policy, ports, _, err := network.ParseNftables([]byte(out))
		if err != nil {
			t.Fatalf("the ruleset the kernel holds: %v\n%s", err, out)
		}
		slices.Sort(ports)
		want := slices.Sorted(slices.Values(c.ports))
		if policy != "drop" || !slices.Equal(ports, want) {
			t.Errorf("%s: the kernel's input policy is %q with ports %v; want drop with %v", c.hardening, policy, ports, want)
		}
	}
}

// The sudo step's edits of /etc/sudoers, run on Debian's and Ubuntu's
// sudoers with visudo checking each: the distributions' grants to sudo and
// admin are commented out, the drop-in is installed, and the result parses
// to rules that give ALL to the admin group alone.
func TestHardeningSudoStep(t *testing.T) {
	testutil.Root(t)
	testutil.Tool(t, "visudo", "sudo")
	unshare := testutil.Tool(t, "unshare", "util-linux")
	step := testutil.PlanStep(t, renderCase(t, "debian-12-debian-535"), "hardening: sudo")
	for name, sudoers := range map[string]string{
		"debian": "Defaults\tenv_reset\nDefaults\tsecure_path=\"/usr/sbin:/usr/bin:/sbin:/bin\"\nroot\tALL=(ALL:ALL) ALL\n%sudo\tALL=(ALL:ALL) ALL\n@includedir /etc/sudoers.d\n",
		"ubuntu": "Defaults\tenv_reset\nroot\tALL=(ALL:ALL) ALL\n%admin ALL=(ALL) ALL\n%sudo\tALL=(ALL:ALL) ALL\n#includedir /etc/sudoers.d\n",
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			etc := filepath.Join(root, "etc")
			if err := os.MkdirAll(filepath.Join(etc, "sudoers.d"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(etc, "sudoers"), []byte(sudoers), 0o440); err != nil {
				t.Fatal(err)
			}
			work := t.TempDir()
			script := `set -eu
die() { echo "die: $*" >&2; exit 1; }
GPUHOST_WORK=$2
mount --make-rprivate /
mount --bind "$1/sudoers" /etc/sudoers
mount --bind "$1/sudoers.d" /etc/sudoers.d
` + step
			testutil.Run(t, time.Minute, unshare, "--mount", "/bin/sh", "-c", script, "sh", etc, work)
			main, err := os.ReadFile(filepath.Join(etc, "sudoers"))
			if err != nil {
				t.Fatal(err)
			}
			s, err := access.ParseSudoers("/etc/sudoers", main)
			if err != nil {
				t.Fatal(err)
			}
			dropIn, err := os.ReadFile(filepath.Join(etc, "sudoers.d", "50-gpuhost"))
			if err != nil {
				t.Fatal(err)
			}
			d, err := access.ParseSudoers(SudoersDropIn, dropIn)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range append(s.Rules, d.Rules...) {
				if r.AllCommands && !slices.Equal(r.Users, []string{"root"}) && !slices.Equal(r.Users, []string{"%gpuhost-admin"}) {
					t.Errorf("%s:%d still gives %v everything", r.File, r.Line, r.Users)
				}
			}
			if info, err := os.Stat(filepath.Join(etc, "sudoers.d", "50-gpuhost")); err != nil || info.Mode().Perm() != 0o440 {
				t.Errorf("the drop-in's mode: %v, %v; want 0440", info.Mode(), err)
			}
		})
	}
}
