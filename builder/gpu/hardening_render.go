package gpu

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/builder/internal/firstboot"
)

// keyValue is one setting of a file the plan edits.
type keyValue struct{ Key, Value string }

// conf is what the plan sets in auditd.conf, in the file's own order.
func (a HardeningAudit) conf() []keyValue {
	return []keyValue{
		{"max_log_file_action", a.MaxLogFileAction},
		{"space_left_action", a.SpaceLeftAction},
		{"admin_space_left_action", a.AdminSpaceLeftAction},
		{"disk_full_action", a.DiskFullAction},
		{"disk_error_action", a.DiskErrorAction},
	}
}

// Where the hardening writes.
const (
	SSHDropIn        = "/etc/ssh/sshd_config.d/00-gpuhost.conf"
	OpenSSLInclude   = "/etc/ssl/openssl.cnf.d/50-gpuhost.cnf"
	NftablesConf     = "/etc/nftables.conf"
	AuditRulesFile   = "/etc/audit/rules.d/50-gpuhost.rules"
	SudoersDropIn    = "/etc/sudoers.d/50-gpuhost"
	JournaldDropIn   = "/etc/systemd/journald.conf.d/50-gpuhost.conf"
	SysctlDropIn     = "/etc/sysctl.d/60-gpuhost.conf"
	ModprobeDropIn   = "/etc/modprobe.d/60-gpuhost.conf"
	LimitsDropIn     = "/etc/security/limits.d/60-gpuhost.conf"
	pamTOTPModule    = "pam_google_authenticator.so"
	totpPackage      = "libpam-google-authenticator"
	opensslSSLSect   = "gpuhost_ssl_sect"
	opensslSysDefSec = "gpuhost_system_default_sect"
)

// hardeningPlan is what the plan template needs: every file the hardening
// writes, rendered here so that tests can read each with the parser the
// matching collector uses.
type hardeningPlan struct {
	H        *Hardening
	Packages []string
	// Where each file goes, for the template.
	OpenSSLFile, SSHDFile, NftablesFile, AuditRulesFile, SudoersFile, JournaldFile string
	HostKeysUnit, TOTPPackage                                                      string

	Groups     []string
	OpenSSL    string
	SSHD       string
	SSHDExpect []string
	MFA        bool
	HostKeys   string
	Nftables   string
	AuditRules string
	AuditConf  []keyValue
	Sudoers    string
	SudoLogDir string
	Revoke     string
	Journald   string
	// The baseline: login.defs settings, the sysctl, modprobe and limits
	// drop-ins, and the files whose owner, group and mode are set.
	Baseline                             bool
	SysctlFile, ModprobeFile, LimitsFile string
	LoginDefs                            []keyValue
	Sysctl, Modprobe, Limits             string
	Files                                []baselineFile
	// Live renders the step that applies the files to the running host
	// (Config.Live).
	Live bool
}

// hardeningPlan renders the files; h has passed validation.
func (h *Hardening) plan() *hardeningPlan {
	p := &hardeningPlan{
		H: h, Groups: h.roleGroups(),
		OpenSSLFile: OpenSSLInclude, SSHDFile: SSHDropIn, NftablesFile: NftablesConf,
		AuditRulesFile: AuditRulesFile, SudoersFile: SudoersDropIn, JournaldFile: JournaldDropIn,
		HostKeysUnit: firstboot.SSHHostKeysUnitName, TOTPPackage: totpPackage,
	}
	// groupadd, for the role groups; openssl ships openssl.cnf.
	p.Packages = []string{"passwd"}
	if !h.TLS.Skip {
		p.Packages = append(p.Packages, "openssl")
		p.OpenSSL = h.openSSLInclude()
	}
	if !h.SSH.Skip {
		p.Packages = append(p.Packages, "openssh-server")
		p.SSHD = h.sshdDropIn()
		p.SSHDExpect = h.sshdExpect()
		p.MFA = h.mfa()
		if p.MFA {
			p.Packages = append(p.Packages, totpPackage)
		}
		if h.SSH.HostKeys == HostKeysFirstBoot {
			p.HostKeys = firstboot.SSHHostKeysUnit
		}
	}
	if !h.Firewall.Skip {
		p.Packages = append(p.Packages, "nftables")
		p.Nftables = h.nftables()
	}
	if !h.Audit.Skip {
		p.Packages = append(p.Packages, "auditd")
		p.AuditRules = h.auditRules()
		p.AuditConf = h.Audit.conf()
	}
	if !h.Sudo.Skip {
		p.Packages = append(p.Packages, "sudo")
		p.Sudoers = h.sudoers()
		p.SudoLogDir = path.Dir(h.Sudo.LogFile)
		p.Revoke = strings.Join(h.Sudo.RevokeGroups, "|")
	}
	if !h.Journald.Skip {
		p.Journald = h.journald()
	}
	if b := h.Baseline; !b.Skip {
		p.Baseline = true
		p.SysctlFile, p.ModprobeFile, p.LimitsFile = SysctlDropIn, ModprobeDropIn, LimitsDropIn
		for _, k := range slices.Sorted(maps.Keys(b.LoginDefs)) {
			p.LoginDefs = append(p.LoginDefs, keyValue{k, b.LoginDefs[k]})
		}
		p.Sysctl, p.Modprobe = b.sysctl(), b.modprobe()
		if !b.AllowCoreDumps {
			p.Limits = "# Written by the gpuhost-gpu provisioner (hardening.baseline): no login\n" +
				"# may dump core, which can hold a process's secrets (CIS 1.6.4).\n* hard core 0\n"
		}
		if !b.SkipFiles {
			p.Files = baselineFiles(defaultPack())
		}
	}
	return p
}

// sysctl is the sysctl.d drop-in. systemd-sysctl reads /etc/sysctl.d,
// /run/sysctl.d and /usr/lib/sysctl.d by file name, and a later file's
// value wins: 60- comes after the distributions' own (10- to 50-) and
// before 99-sysctl.conf, the administrator's /etc/sysctl.conf.
func (b HardeningBaseline) sysctl() string {
	values := maps.Clone(b.Sysctl)
	if !b.AllowCoreDumps {
		if _, ok := values["fs.suid_dumpable"]; !ok {
			values["fs.suid_dumpable"] = "0"
		}
	}
	if len(values) == 0 {
		return ""
	}
	var s strings.Builder
	s.WriteString("# Written by the gpuhost-gpu provisioner (hardening.baseline): the kernel\n")
	s.WriteString("# parameters the policy pack's params ask for (GH-KRN-002).\n")
	for _, k := range slices.Sorted(maps.Keys(values)) {
		fmt.Fprintf(&s, "%s = %s\n", k, values[k])
	}
	return s.String()
}

// modprobe is the modprobe.d drop-in: an install line that runs
// /bin/false keeps a module from loading even when something asks for it
// by name, which a blacklist line alone does not.
func (b HardeningBaseline) modprobe() string {
	if len(b.DisabledModules) == 0 {
		return ""
	}
	var s strings.Builder
	s.WriteString("# Written by the gpuhost-gpu provisioner (hardening.baseline): modules a\n")
	s.WriteString("# GPU server has no use for, kept from loading (GH-KRN-001).\n")
	for _, m := range b.DisabledModules {
		fmt.Fprintf(&s, "install %s /bin/false\nblacklist %s\n", m, m)
	}
	return s.String()
}

// baselineFile is a path, or a glob, whose owner, group and most
// permissive mode the plan sets where the image has it; "-" leaves one
// alone.
type baselineFile struct {
	Path, Owner, Group, Mode string
	// Glob: the path has * or ?, and the shell expands it.
	Glob bool
}

// baselineFiles is every path the params' files_owner, files_group and
// files_mode name, in path order.
func baselineFiles(d packDefaults) []baselineFile {
	paths := map[string]bool{}
	for _, m := range []map[string]int{d.FilesOwner, d.FilesGroup} {
		for k := range m {
			paths[k] = true
		}
	}
	for k := range d.FilesMode {
		paths[k] = true
	}
	var out []baselineFile
	for _, k := range slices.Sorted(maps.Keys(paths)) {
		f := baselineFile{Path: k, Owner: "-", Group: "-", Mode: "-", Glob: strings.ContainsAny(k, "*?")}
		if v, ok := d.FilesOwner[k]; ok {
			f.Owner = strconv.Itoa(v)
		}
		if v, ok := d.FilesGroup[k]; ok {
			f.Group = strconv.Itoa(v)
		}
		if v, ok := d.FilesMode[k]; ok {
			f.Mode = v
		}
		out = append(out, f)
	}
	return out
}

// openSSLInclude is the file openssl.cnf includes, less its first line:
// the header of the openssl_conf section, which the plan reads from the
// target's openssl.cnf. Reopening that section adds ssl_conf to it; OpenSSL
// keeps the last value of a name, so this one wins over a distribution's
// own ssl_conf (Ubuntu's) wherever it is.
func (h *Hardening) openSSLInclude() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ssl_conf = %s\n\n", opensslSSLSect)
	fmt.Fprintf(&b, "[%s]\nsystem_default = %s\n\n", opensslSSLSect, opensslSysDefSec)
	fmt.Fprintf(&b, "[%s]\n", opensslSysDefSec)
	fmt.Fprintf(&b, "MinProtocol = %s\n", h.TLS.MinProtocol)
	fmt.Fprintf(&b, "CipherString = %s\n", h.TLS.CipherString)
	return b.String()
}

func (h *Hardening) sshdDropIn() string {
	s := h.SSH
	yesNo := func(v bool) string {
		if v {
			return "yes"
		}
		return "no"
	}
	var b strings.Builder
	b.WriteString(`# Written by the gpuhost-gpu provisioner (hardening.ssh). sshd takes the
# first value of each keyword and reads sshd_config.d before the rest of
# sshd_config, so these win; this name sorts before other drop-ins.
# Keys only: no password is ever accepted.
`)
	for _, kv := range h.sshdSettings() {
		fmt.Fprintf(&b, "%s %s\n", kv.Key, kv.Value)
	}
	fmt.Fprintf(&b, "X11Forwarding %s\n", yesNo(s.X11Forwarding))
	fmt.Fprintf(&b, "AllowGroups %s\n", strings.Join(s.AllowGroups, " "))
	if h.mfa() {
		b.WriteString(`
# A one-time code after the key: keyboard-interactive is asked only once
# publickey has succeeded, so no password can be guessed. A Match block
# ends this file's global settings.
`)
		fmt.Fprintf(&b, "Match Group %s\n", strings.Join(s.MFAGroups, ","))
		b.WriteString("\tKbdInteractiveAuthentication yes\n")
		b.WriteString("\tAuthenticationMethods publickey,keyboard-interactive\n")
	}
	return b.String()
}

// sshdSettings are the drop-in's global keywords whose effective value the
// plan checks with sshd -T, in the order written.
func (h *Hardening) sshdSettings() []keyValue {
	s := h.SSH
	kv := []keyValue{
		{"PermitRootLogin", s.PermitRootLogin},
		{"PasswordAuthentication", "no"},
		{"KbdInteractiveAuthentication", "no"},
		{"PermitEmptyPasswords", "no"},
	}
	if h.mfa() {
		kv = append(kv, keyValue{"UsePAM", "yes"})
	}
	return append(kv,
		keyValue{"Ciphers", strings.Join(s.Ciphers, ",")},
		keyValue{"KexAlgorithms", strings.Join(s.KexAlgorithms, ",")},
		keyValue{"MACs", strings.Join(s.MACs, ",")},
		keyValue{"HostKeyAlgorithms", strings.Join(s.HostKeyAlgorithms, ",")},
		keyValue{"MaxAuthTries", strconv.Itoa(s.MaxAuthTries)},
		keyValue{"LoginGraceTime", strconv.Itoa(s.LoginGraceTime)},
		keyValue{"ClientAliveInterval", strconv.Itoa(s.ClientAliveInterval)},
		keyValue{"ClientAliveCountMax", strconv.Itoa(s.ClientAliveCountMax)},
		keyValue{"LogLevel", s.LogLevel},
	)
}

// sshdExpect are the lines `sshd -T` must print: lower-case keywords, and
// one allowgroups line per group.
func (h *Hardening) sshdExpect() []string {
	var out []string
	for _, kv := range h.sshdSettings() {
		// sshd -T prints the first name of a value: prohibit-password as
		// its older alias without-password.
		if kv.Key == "PermitRootLogin" && kv.Value == "prohibit-password" {
			kv.Value = "without-password"
		}
		out = append(out, strings.ToLower(kv.Key)+" "+kv.Value)
	}
	x11 := "no"
	if h.SSH.X11Forwarding {
		x11 = "yes"
	}
	out = append(out, "x11forwarding "+x11)
	for _, g := range h.SSH.AllowGroups {
		out = append(out, "allowgroups "+g)
	}
	return out
}

func (h *Hardening) nftables() string {
	f := h.Firewall
	var b strings.Builder
	b.WriteString(`#!/usr/sbin/nft -f
# Written by the gpuhost-gpu provisioner (hardening.firewall).
#
# Inbound traffic is dropped unless it comes from loopback, answers the
# host's own connections, or goes to a port listed below. Forwarding is left
# alone: the container network plugin installs its own table for pod
# traffic, and a drop here would cut every pod off.

flush ruleset

table inet filter {
	chain input {
		type filter hook input priority filter; policy drop;

		iif "lo" accept
		ct state established,related accept
		ct state invalid drop
`)
	if f.AllowICMP.True() {
		b.WriteString(`
		# Path MTU discovery and IPv6 neighbour discovery need ICMP.
		# icmpv6, nft's own name, not ipv6-icmp: that one is looked up in
		# /etc/protocols, which a minbase image has not (no netbase), and
		# nft then refuses the whole file at boot.
		meta l4proto { icmp, icmpv6 } accept
`)
	}
	for _, l := range []struct {
		proto string
		ports []int
	}{{"tcp", f.AllowedTCPPorts}, {"udp", f.AllowedUDPPorts}} {
		if len(l.ports) == 0 {
			continue
		}
		s := make([]string, len(l.ports))
		for i, p := range l.ports {
			s[i] = strconv.Itoa(p)
		}
		if l.proto == "tcp" {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "\t\t%s dport { %s } accept\n", l.proto, strings.Join(s, ", "))
	}
	b.WriteString(`	}

	chain output {
		type filter hook output priority filter; policy accept;
	}
}
`)
	return b.String()
}

func (h *Hardening) auditRules() string {
	a := h.Audit
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by the gpuhost-gpu provisioner (hardening.audit) as\n# %s; augenrules joins rules.d when auditd starts.\n", AuditRulesFile)
	if a.RecordCommands.True() {
		b.WriteString(`
# Every command run as root, and by everyone who logged in (auid), in both
# system call tables: a 32-bit execve is not an arch=b64 execve.
`)
		for _, who := range []struct{ filter, key string }{
			{"-F euid=0", "gpuhost-root-exec"},
			{"-F auid>=1000 -F auid!=unset", "gpuhost-user-exec"},
		} {
			for _, arch := range []string{"b64", "b32"} {
				fmt.Fprintf(&b, "-a always,exit -F arch=%s -S execve,execveat %s -k %s\n", arch, who.filter, who.key)
			}
		}
	}
	if len(a.WatchPaths) > 0 {
		b.WriteString("\n# Who may do what, and how the GPUs reach containers.\n")
		for _, p := range a.WatchPaths {
			fmt.Fprintf(&b, "-w %s -p wa -k gpuhost-config\n", p)
		}
	}
	if len(a.ExecPaths) > 0 {
		b.WriteString("\n# GPU mode changes: MIG, ECC, clocks and power limits (nvidia-smi), the\n# runtime's GPU configuration (nvidia-ctk).\n")
		for _, p := range a.ExecPaths {
			fmt.Fprintf(&b, "-w %s -p x -k gpuhost-gpu-mode\n", p)
		}
	}
	return b.String()
}

func (h *Hardening) sudoers() string {
	s := h.Sudo
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by the gpuhost-gpu provisioner (hardening.sudo) as %s.\n", SudoersDropIn)
	b.WriteString("# Only the admin role runs anything as root, with its own password.\n")
	if s.UsePTY.True() {
		b.WriteString("Defaults use_pty\n")
	}
	fmt.Fprintf(&b, "Defaults logfile=%q\n", s.LogFile)
	for _, g := range h.Roles.Admin {
		fmt.Fprintf(&b, "%%%s ALL=(ALL:ALL) ALL\n", g)
	}
	return b.String()
}

func (h *Hardening) journald() string {
	j := h.Journald
	var b strings.Builder
	b.WriteString("# Written by the gpuhost-gpu provisioner (hardening.journald).\n[Journal]\n")
	fmt.Fprintf(&b, "Storage=%s\n", j.Storage)
	if j.SystemMaxUse != "" {
		fmt.Fprintf(&b, "SystemMaxUse=%s\n", j.SystemMaxUse)
	}
	return b.String()
}
