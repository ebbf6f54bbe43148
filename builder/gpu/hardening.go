package gpu

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/hashicorp/packer-plugin-sdk/template/config"

	"github.com/gpuhost/gpuhost/policies"
)

// Hardening is the host hardening the plan applies after the GPU stack, so
// that the manifest the provisioner writes last records the hardened files.
// Its defaults are the settings the default policy pack holds an image to
// (GH-TLS, GH-SSH, GH-NET, GH-AUD and GH-IAM checks); each part can be left
// out with its skip.
type Hardening struct {
	// The image's /etc/hostname. mmdebstrap copies the build machine's,
	// which would then name every host booted from the image; a neutral name
	// keeps the build machine out of the image and gives waivers a target.
	// Empty leaves /etc/hostname as the target has it.
	Hostname string `mapstructure:"hostname"`
	// The role groups the access checks judge by (params.roles): created as
	// system groups, admitted by sshd and, for admins, by sudo.
	Roles HardeningRoles `mapstructure:"roles"`
	// The system-wide OpenSSL default every program linking libssl starts
	// from.
	TLS HardeningTLS `mapstructure:"tls"`
	// sshd: keys only, strong algorithms, the role groups, a second factor
	// for admins.
	SSH HardeningSSH `mapstructure:"ssh"`
	// An nftables ruleset that drops inbound traffic by default.
	Firewall HardeningFirewall `mapstructure:"firewall"`
	// auditd's rules and what it does when its log or disk fills.
	Audit HardeningAudit `mapstructure:"audit"`
	// Who may run what as root.
	Sudo HardeningSudo `mapstructure:"sudo"`
	// Where the journal is kept.
	Journald HardeningJournald `mapstructure:"journald"`
	// Password ageing and the umask, kernel modules and parameters, core
	// dumps, and the owner and mode of the files CIS names.
	Baseline HardeningBaseline `mapstructure:"baseline"`
}

// HardeningRoles are the groups that hold each role. They must match the
// params the image is judged with (params.roles; the default pack's are
// these defaults).
type HardeningRoles struct {
	// Groups that may run anything as root (with their password) and log in
	// with a second factor. Defaults to `["gpuhost-admin"]`; at least one.
	Admin []string `mapstructure:"admin"`
	// Groups that may log in and get named commands from a sudoers drop-in
	// of their own. Defaults to `["gpuhost-dev"]`.
	Developer []string `mapstructure:"developer"`
	// Groups that may log in to review the host and change nothing.
	// Defaults to `["gpuhost-audit"]`.
	Auditor []string `mapstructure:"auditor"`
}

// HardeningTLS is the OpenSSL system default: openssl.cnf's openssl_conf
// section gets an ssl_conf whose system_default sets these, in a file
// /etc/ssl/openssl.cnf includes (/etc/ssl/openssl.cnf.d/50-gpuhost.cnf).
type HardeningTLS struct {
	// Leave OpenSSL's configuration alone.
	Skip bool `mapstructure:"skip"`
	// The lowest protocol libssl negotiates unless a program sets its own:
	// `TLSv1.3` (the default) or `TLSv1.2`. GH-TLS-001 fails TLSv1.2 under
	// the default params.
	MinProtocol string `mapstructure:"min_protocol"`
	// The system default CipherString (TLS 1.2 and below, and the security
	// level, which bounds key sizes and signature algorithms in TLS 1.3
	// too). Defaults to `DEFAULT:@SECLEVEL=2`, what Debian and Ubuntu build
	// in; the file replaces Ubuntu's own system_default section, so it is
	// set here again.
	CipherString string `mapstructure:"cipher_string"`
}

// HardeningSSH is the sshd drop-in /etc/ssh/sshd_config.d/00-gpuhost.conf.
// sshd takes the first value of each keyword and reads this directory in
// name order before the rest of sshd_config, so these settings win over
// any other drop-in (a cloud image's 50-cloud-init.conf, say). Passwords
// and empty passwords are always refused: that is what the drop-in is for.
// The plan checks with `sshd -T` that sshd's effective configuration is
// what it wrote.
type HardeningSSH struct {
	// Leave sshd alone.
	Skip bool `mapstructure:"skip"`
	// `no` (the default), `prohibit-password` or `forced-commands-only`;
	// `yes` is refused. GH-SSH-001 fails anything but no.
	PermitRootLogin string `mapstructure:"permit_root_login"`
	// Ciphers, in preference order. Defaults to
	// `["chacha20-poly1305@openssh.com", "aes256-gcm@openssh.com"]`.
	// Names must be OpenSSH's, and none the default pack calls weak.
	Ciphers []string `mapstructure:"ciphers"`
	// KexAlgorithms. Defaults to
	// `["sntrup761x25519-sha512@openssh.com", "curve25519-sha256"]`.
	KexAlgorithms []string `mapstructure:"kex_algorithms"`
	// MACs. Defaults to
	// `["hmac-sha2-512-etm@openssh.com", "hmac-sha2-256-etm@openssh.com"]`.
	MACs []string `mapstructure:"macs"`
	// HostKeyAlgorithms, the signatures sshd offers with its host keys.
	// Defaults to `["ssh-ed25519", "rsa-sha2-512", "rsa-sha2-256"]`
	// (ssh-rsa, which signs with SHA-1, is weak).
	HostKeyAlgorithms []string `mapstructure:"host_key_algorithms"`
	// The groups sshd admits (AllowGroups). Defaults to every role group;
	// each must be a role group (GH-IAM-005).
	AllowGroups []string `mapstructure:"allow_groups"`
	// The groups asked a one-time code after their key (a Match Group block
	// with AuthenticationMethods publickey,keyboard-interactive, and
	// pam_google_authenticator in sshd's PAM stack). Defaults to the admin
	// groups (GH-IAM-006).
	MFAGroups []string `mapstructure:"mfa_groups"`
	// The second factor: `totp` (the default: pam_google_authenticator,
	// libpam-google-authenticator is installed; each admin enrolls with
	// google-authenticator) or `none`, which writes no Match block and
	// leaves PAM alone.
	SecondFactor string `mapstructure:"second_factor"`
	// MaxAuthTries. Defaults to 4.
	MaxAuthTries int `mapstructure:"max_auth_tries"`
	// LoginGraceTime in seconds. Defaults to 60.
	LoginGraceTime int `mapstructure:"login_grace_time"`
	// ClientAliveInterval in seconds: an idle session is probed this often.
	// Defaults to 300.
	ClientAliveInterval int `mapstructure:"client_alive_interval"`
	// ClientAliveCountMax: unanswered probes before the session is dropped.
	// Defaults to 3.
	ClientAliveCountMax int `mapstructure:"client_alive_count_max"`
	// Allow X11 forwarding. Off by default: a GPU host serves no display.
	X11Forwarding bool `mapstructure:"x11_forwarding"`
	// LogLevel: `VERBOSE` (the default; it logs the fingerprint of the key
	// each login used) or `INFO`.
	LogLevel string `mapstructure:"log_level"`
	// What to do with the host keys openssh-server made when it was
	// installed: `first_boot` (the default) removes them and installs
	// gpuhost-ssh-hostkeys.service, which makes each host its own before
	// sshd starts (GH-SSH-010: hosts sharing keys can impersonate each
	// other); `keep` leaves them, for a cloud builder whose instances
	// regenerate them (cloud-init) and whose build still logs in over ssh.
	HostKeys string `mapstructure:"host_keys"`
}

// HardeningFirewall is /etc/nftables.conf, enabled at boot: inbound traffic
// is dropped unless it answers the host's own connections, comes from
// loopback, or goes to a port listed here. Forwarding is left alone: a
// container network plugin adds its own table for pod traffic.
type HardeningFirewall struct {
	// Leave the firewall alone.
	Skip bool `mapstructure:"skip"`
	// TCP ports open inbound. Defaults to `[22]`. Each must be in the params'
	// allowed_ports (GH-NET-003).
	AllowedTCPPorts []int `mapstructure:"allowed_tcp_ports"`
	// UDP ports open inbound. None by default.
	AllowedUDPPorts []int `mapstructure:"allowed_udp_ports"`
	// Accept ICMP and ICMPv6: path MTU discovery and IPv6 neighbour
	// discovery break without them. Defaults to true.
	AllowICMP config.Trilean `mapstructure:"allow_icmp"`
}

// HardeningAudit is /etc/audit/rules.d/50-gpuhost.rules (augenrules joins
// rules.d when auditd starts) and the log settings in
// /etc/audit/auditd.conf; auditd.service is enabled.
type HardeningAudit struct {
	// Leave auditd alone.
	Skip bool `mapstructure:"skip"`
	// Record every execve and execveat run as root and by every user who
	// logged in (auid 1000 and up), in both system call tables (GH-AUD-002).
	// Defaults to true.
	RecordCommands config.Trilean `mapstructure:"record_commands"`
	// Paths whose writes and attribute changes are recorded (-w PATH -p wa,
	// GH-AUD-003). Defaults to the default params' audit_watch_paths:
	// sudoers, sudoers.d, /etc/ssh, /etc/gpuhost, /etc/containerd and
	// /etc/nvidia-container-runtime.
	WatchPaths []string `mapstructure:"watch_paths"`
	// Programs whose runs are recorded (-w PATH -p x, GH-AUD-004). Defaults
	// to the default params' audit_gpu_tools, the GPU mode tools
	// /usr/bin/nvidia-smi and /usr/bin/nvidia-ctk (watched where they are
	// not installed yet too: the kernel watches the path).
	ExecPaths []string `mapstructure:"exec_paths"`
	// auditd.conf max_log_file_action. Defaults to `keep_logs`: rotate
	// would delete the oldest records (GH-AUD-005).
	MaxLogFileAction string `mapstructure:"max_log_file_action"`
	// space_left_action. Defaults to `email`.
	SpaceLeftAction string `mapstructure:"space_left_action"`
	// admin_space_left_action. Defaults to `single`.
	AdminSpaceLeftAction string `mapstructure:"admin_space_left_action"`
	// disk_full_action. Defaults to `halt`.
	DiskFullAction string `mapstructure:"disk_full_action"`
	// disk_error_action. Defaults to `halt`.
	DiskErrorAction string `mapstructure:"disk_error_action"`
}

// HardeningSudo is /etc/sudoers.d/50-gpuhost, checked with visudo -c before
// it is installed: the admin groups may run anything as root with their
// password, every command runs on its own pseudo-terminal and is logged.
type HardeningSudo struct {
	// Leave sudo alone.
	Skip bool `mapstructure:"skip"`
	// Run every command on a pseudo-terminal of its own (Defaults use_pty),
	// so that it cannot push input into the caller's terminal after sudo
	// exits (GH-IAM-004). Defaults to true.
	UsePTY config.Trilean `mapstructure:"use_pty"`
	// Where sudo logs what it ran (Defaults logfile). Defaults to
	// `/var/log/sudo.log`.
	LogFile string `mapstructure:"log_file"`
	// Groups whose rules in /etc/sudoers are commented out: the
	// distributions give `sudo` (and Ubuntu `admin`) everything, which is
	// the admin role's alone here (GH-IAM-002). Defaults to
	// `["sudo", "admin"]`.
	RevokeGroups []string `mapstructure:"revoke_groups"`
}

// HardeningJournald is the journald drop-in
// /etc/systemd/journald.conf.d/50-gpuhost.conf.
type HardeningJournald struct {
	// Leave journald alone.
	Skip bool `mapstructure:"skip"`
	// Storage=: `persistent` (the default; the journal outlives a reboot,
	// which is when a crash's records matter), `auto` or `volatile`.
	Storage string `mapstructure:"storage"`
	// SystemMaxUse=, such as `4G`: the most the journal may take on disk.
	// Empty keeps journald's default (10% of the file system, at most 4G).
	SystemMaxUse string `mapstructure:"system_max_use"`
}

// HardeningBaseline is the part of the CIS Ubuntu 22.04 Level 1 server
// benchmark that lives in files the distributions ship loose: password
// ageing and the default umask in /etc/login.defs (GH-IAM-007), kernel
// modules kept from loading (/etc/modprobe.d/60-gpuhost.conf, GH-KRN-001),
// kernel parameters (/etc/sysctl.d/60-gpuhost.conf, GH-KRN-002), core dumps
// (/etc/security/limits.d/60-gpuhost.conf and fs.suid_dumpable, GH-KRN-003),
// and the owner, group and mode of the files the benchmark names
// (GH-FS-001..003). Each default is the default policy pack's param, so an
// image baked with the defaults passes those checks; a template judged by
// other params gives the same values here. Kernel parameters take effect
// at the next boot, live or not: the build instance's own kernel is left
// as it runs.
type HardeningBaseline struct {
	// Leave all of it alone.
	Skip bool `mapstructure:"skip"`
	// /etc/login.defs keywords and the values they are set to, such as
	// `{PASS_MAX_DAYS = "365"}`. Defaults to a value inside each bound of the
	// default params' login_defs: PASS_MAX_DAYS 365, PASS_MIN_DAYS 1,
	// PASS_WARN_AGE 7, UMASK 027. Ageing applies to accounts made from now
	// on (useradd reads login.defs); chage sets an existing one's.
	LoginDefs map[string]string `mapstructure:"login_defs"`
	// Kernel parameters, in sysctl's dotted form, and their values.
	// Defaults to the default params' sysctl_values (CIS Level 1's), which
	// turn forwarding off: a host that routes (a Kubernetes node) sets
	// net.ipv4.ip_forward here and in its params.
	Sysctl map[string]string `mapstructure:"sysctl"`
	// Kernel modules that get "install MODULE /bin/false" and "blacklist
	// MODULE". Defaults to the default params' kernel_modules_disabled.
	DisabledModules []string `mapstructure:"disabled_modules"`
	// Leave core dumps as the distribution has them. By default every
	// login's hard core size limit is 0 and fs.suid_dumpable is 0.
	AllowCoreDumps bool `mapstructure:"allow_core_dumps"`
	// Leave the owner, group and mode of the files CIS names alone. By
	// default each file the default params' files_owner, files_group and
	// files_mode name, where the image has it, gets that owner and group,
	// and loses every mode bit the param leaves clear (no bit is added).
	SkipFiles bool `mapstructure:"skip_files"`
}

// Hardening defaults: the algorithms ssh-audit and the default pack accept
// on every OpenSSH from 8.9 (Ubuntu 22.04) on.
var (
	defaultSSHCiphers           = []string{"chacha20-poly1305@openssh.com", "aes256-gcm@openssh.com"}
	defaultSSHKex               = []string{"sntrup761x25519-sha512@openssh.com", "curve25519-sha256"}
	defaultSSHMACs              = []string{"hmac-sha2-512-etm@openssh.com", "hmac-sha2-256-etm@openssh.com"}
	defaultSSHHostKeyAlgorithms = []string{"ssh-ed25519", "rsa-sha2-512", "rsa-sha2-256"}
)

// Second factors, and what happens to the host keys.
const (
	SecondFactorTOTP  = "totp"
	SecondFactorNone  = "none"
	HostKeysFirstBoot = "first_boot"
	HostKeysKeep      = "keep"
)

func (h *Hardening) defaults() {
	r := &h.Roles
	if r.Admin == nil {
		r.Admin = []string{"gpuhost-admin"}
	}
	if r.Developer == nil {
		r.Developer = []string{"gpuhost-dev"}
	}
	if r.Auditor == nil {
		r.Auditor = []string{"gpuhost-audit"}
	}
	if h.TLS.MinProtocol == "" {
		h.TLS.MinProtocol = "TLSv1.3"
	}
	if h.TLS.CipherString == "" {
		h.TLS.CipherString = "DEFAULT:@SECLEVEL=2"
	}
	s := &h.SSH
	if s.PermitRootLogin == "" {
		s.PermitRootLogin = "no"
	}
	setList := func(l *[]string, def []string) {
		if *l == nil {
			*l = slices.Clone(def)
		}
	}
	setList(&s.Ciphers, defaultSSHCiphers)
	setList(&s.KexAlgorithms, defaultSSHKex)
	setList(&s.MACs, defaultSSHMACs)
	setList(&s.HostKeyAlgorithms, defaultSSHHostKeyAlgorithms)
	setList(&s.AllowGroups, h.roleGroups())
	setList(&s.MFAGroups, r.Admin)
	if s.SecondFactor == "" {
		s.SecondFactor = SecondFactorTOTP
	}
	setInt := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	setInt(&s.MaxAuthTries, 4)
	setInt(&s.LoginGraceTime, 60)
	setInt(&s.ClientAliveInterval, 300)
	setInt(&s.ClientAliveCountMax, 3)
	if s.LogLevel == "" {
		s.LogLevel = "VERBOSE"
	}
	if s.HostKeys == "" {
		s.HostKeys = HostKeysFirstBoot
	}
	f := &h.Firewall
	setTri := func(t *config.Trilean) {
		if *t == config.TriUnset {
			*t = config.TriTrue
		}
	}
	if f.AllowedTCPPorts == nil {
		f.AllowedTCPPorts = []int{22}
	}
	setTri(&f.AllowICMP)
	a := &h.Audit
	setTri(&a.RecordCommands)
	pack := defaultPack()
	setList(&a.WatchPaths, pack.AuditWatchPaths)
	setList(&a.ExecPaths, pack.AuditGPUTools)
	setStr := func(v *string, def string) {
		if *v == "" {
			*v = def
		}
	}
	setStr(&a.MaxLogFileAction, "keep_logs")
	setStr(&a.SpaceLeftAction, "email")
	setStr(&a.AdminSpaceLeftAction, "single")
	setStr(&a.DiskFullAction, "halt")
	setStr(&a.DiskErrorAction, "halt")
	setTri(&h.Sudo.UsePTY)
	setStr(&h.Sudo.LogFile, "/var/log/sudo.log")
	setList(&h.Sudo.RevokeGroups, []string{"sudo", "admin"})
	setStr(&h.Journald.Storage, "persistent")
	b := &h.Baseline
	if b.LoginDefs == nil {
		b.LoginDefs = pack.loginDefsValues()
	}
	if b.Sysctl == nil {
		b.Sysctl = maps.Clone(pack.Sysctl)
	}
	setList(&b.DisabledModules, pack.DisabledModules)
}

// roleGroups are every role's groups, admins first, without repeats.
func (h *Hardening) roleGroups() []string {
	var out []string
	for _, g := range slices.Concat(h.Roles.Admin, h.Roles.Developer, h.Roles.Auditor) {
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// mfa says whether the plan asks the MFA groups a second factor.
func (h *Hardening) mfa() bool {
	return !h.SSH.Skip && h.SSH.SecondFactor == SecondFactorTOTP && len(h.SSH.MFAGroups) > 0
}

// OpenSSH's algorithm names (9.x, which knows every name 8.9 does). A name
// outside these makes sshd refuse to start, so it is refused before a
// build rather than after.
var (
	sshCiphers = []string{
		"3des-cbc", "aes128-cbc", "aes192-cbc", "aes256-cbc", "aes128-ctr", "aes192-ctr", "aes256-ctr",
		"aes128-gcm@openssh.com", "aes256-gcm@openssh.com", "chacha20-poly1305@openssh.com",
	}
	sshKex = []string{
		"curve25519-sha256", "curve25519-sha256@libssh.org",
		"diffie-hellman-group1-sha1", "diffie-hellman-group14-sha1", "diffie-hellman-group14-sha256",
		"diffie-hellman-group16-sha512", "diffie-hellman-group18-sha512",
		"diffie-hellman-group-exchange-sha1", "diffie-hellman-group-exchange-sha256",
		"ecdh-sha2-nistp256", "ecdh-sha2-nistp384", "ecdh-sha2-nistp521",
		"sntrup761x25519-sha512@openssh.com", "sntrup761x25519-sha512", "mlkem768x25519-sha256",
	}
	sshMACs = func() []string {
		base := []string{
			"hmac-md5", "hmac-md5-96", "hmac-sha1", "hmac-sha1-96", "hmac-sha2-256", "hmac-sha2-512",
			"umac-64@openssh.com", "umac-128@openssh.com",
		}
		out := slices.Clone(base)
		for _, m := range base {
			out = append(out, strings.TrimSuffix(m, "@openssh.com")+"-etm@openssh.com")
		}
		return out
	}()
	sshHostKeyAlgorithms = func() []string {
		base := []string{
			"ssh-ed25519", "sk-ssh-ed25519@openssh.com",
			"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "sk-ecdsa-sha2-nistp256@openssh.com",
			"rsa-sha2-256", "rsa-sha2-512", "ssh-rsa", "ssh-dss",
		}
		out := slices.Clone(base)
		for _, a := range base {
			out = append(out, strings.TrimSuffix(a, "@openssh.com")+"-cert-v01@openssh.com")
		}
		return out
	}()
)

// packDefaults is what the hardening takes from the default policy pack's
// params: the algorithms it calls weak and the paths it wants watched, so
// that validation and the gate agree.
type packDefaults struct {
	WeakCiphers     []string `yaml:"ssh_weak_ciphers"`
	WeakKex         []string `yaml:"ssh_weak_kex"`
	WeakMACs        []string `yaml:"ssh_weak_macs"`
	WeakHostKeys    []string `yaml:"ssh_weak_host_key_algorithms"`
	AuditWatchPaths []string `yaml:"audit_watch_paths"`
	AuditGPUTools   []string `yaml:"audit_gpu_tools"`
	LoginDefs       map[string]struct {
		Min   *int   `yaml:"min"`
		Max   *int   `yaml:"max"`
		Umask string `yaml:"umask"`
	} `yaml:"login_defs"`
	Sysctl          map[string]string `yaml:"sysctl_values"`
	DisabledModules []string          `yaml:"kernel_modules_disabled"`
	FilesOwner      map[string]int    `yaml:"files_owner"`
	FilesGroup      map[string]int    `yaml:"files_group"`
	FilesMode       map[string]string `yaml:"files_mode"`
}

// loginDefsValues is a value inside each of the params' login.defs bounds:
// the most a maximum allows, the least a minimum asks, the umask itself.
func (d packDefaults) loginDefsValues() map[string]string {
	out := map[string]string{}
	for k, b := range d.LoginDefs {
		switch {
		case b.Umask != "":
			out[k] = b.Umask
		case b.Max != nil:
			out[k] = strconv.Itoa(*b.Max)
		case b.Min != nil:
			out[k] = strconv.Itoa(*b.Min)
		}
	}
	return out
}

var packDefaultsOnce = sync.OnceValues(func() (packDefaults, error) {
	var d packDefaults
	data, err := policies.DefaultParams()
	if err != nil {
		return d, fmt.Errorf("reading the default params: %w", err)
	}
	if err := yaml.Unmarshal(data, &d); err != nil {
		return d, fmt.Errorf("parsing the default params: %w", err)
	}
	return d, nil
})

// defaultPack is the default pack's params. They are embedded, so failing
// to read them is a broken build, which every test of this package shows.
func defaultPack() packDefaults {
	d, err := packDefaultsOnce()
	if err != nil {
		panic(err)
	}
	return d
}

// weak reports whether name matches one of the pack's patterns, as the
// sshd checks match them: case aside, exactly, or by the prefix before a
// trailing "*".
func weak(name string, patterns []string) bool {
	n := strings.ToLower(name)
	for _, p := range patterns {
		p = strings.ToLower(p)
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(n, prefix) || n == p {
			return true
		}
	}
	return false
}

var (
	groupRe    = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)
	hostnameRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
	// absPathRe is an absolute path of plain characters: the plan writes
	// it into files and shell words.
	absPathRe   = regexp.MustCompile(`^/[A-Za-z0-9._+/-]*$`)
	cipherStrRe = regexp.MustCompile(`^[A-Za-z0-9:@+!=_.-]+$`)
	journalSize = regexp.MustCompile(`^[0-9]+[KMGT]?$`)
	// The baseline's names and values, which the plan writes into files
	// and shell words: login.defs keywords, sysctl keys (dots or slashes),
	// their values and module names.
	loginDefsKeyRe = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,63}$`)
	loginDefsValRe = regexp.MustCompile(`^[A-Za-z0-9_./:-]{1,64}$`)
	sysctlKeyRe    = regexp.MustCompile(`^[a-z0-9_]+([./][A-Za-z0-9_*-]+)+$`)
	sysctlValRe    = regexp.MustCompile(`^[A-Za-z0-9_.:-]+( [A-Za-z0-9_.:-]+)*$`)
	moduleRe       = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)
	auditActions   = map[string][]string{
		// auditd.conf(5), less exec, which needs a program this block does
		// not write.
		"max_log_file_action":     {"ignore", "syslog", "suspend", "rotate", "keep_logs"},
		"space_left_action":       {"ignore", "syslog", "rotate", "email", "suspend", "single", "halt"},
		"admin_space_left_action": {"ignore", "syslog", "rotate", "email", "suspend", "single", "halt"},
		"disk_full_action":        {"ignore", "syslog", "rotate", "suspend", "single", "halt"},
		"disk_error_action":       {"ignore", "syslog", "suspend", "single", "halt"},
	}
)
