package gpu

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

// problems collects what the hardening's validation finds, each problem
// naming its field under hardening.
type problems []string

func (p *problems) add(format string, a ...any) { *p = append(*p, fmt.Sprintf(format, a...)) }

// groups finds the names that are not group names or are listed twice.
func (p *problems) groups(field string, names []string) {
	for i, g := range names {
		if !groupRe.MatchString(g) {
			p.add("%s[%d]: %q is not a group name", field, i, g)
		}
	}
	p.twice(field, names)
}

// twice finds the names listed more than once, at each later place.
func (p *problems) twice(field string, names []string) {
	for i, n := range names {
		if slices.Index(names, n) < i {
			p.add("%s[%d]: %s is listed twice", field, i, n)
		}
	}
}

// cleanPath finds a value that is not a clean absolute path of plain
// characters, the form every file the plan writes is named in.
func (p *problems) cleanPath(field, v string) bool {
	if !absPathRe.MatchString(v) || path.Clean(v) != v {
		p.add("%s: %q is not a clean absolute path of plain characters", field, v)
		return false
	}
	return true
}

// validate checks the hardening after defaults; every problem names its
// field under hardening.
func (h *Hardening) validate() []string {
	var p problems
	if h.Hostname != "" && (len(h.Hostname) > 253 || !hostnameRe.MatchString(h.Hostname)) {
		p.add("hardening.hostname: %q is not a host name (lower-case letters, digits and dashes, dot-separated labels)", h.Hostname)
	}
	h.Roles.validate(&p)
	if t := h.TLS; !t.Skip {
		if t.MinProtocol != "TLSv1.3" && t.MinProtocol != "TLSv1.2" {
			p.add("hardening.tls.min_protocol: %q is not one of TLSv1.3, TLSv1.2", t.MinProtocol)
		}
		if !cipherStrRe.MatchString(t.CipherString) {
			p.add("hardening.tls.cipher_string: %q is not an OpenSSL cipher string such as DEFAULT:@SECLEVEL=2", t.CipherString)
		}
	}
	if !h.SSH.Skip {
		h.validateSSH(&p)
	}
	if f := h.Firewall; !f.Skip {
		ports := func(field string, ps []int) {
			for i, port := range ps {
				if port < 1 || port > 65535 {
					p.add("%s[%d]: %d is not a port (1-65535)", field, i, port)
				} else if slices.Index(ps, port) < i {
					p.add("%s[%d]: %d is listed twice", field, i, port)
				}
			}
		}
		ports("hardening.firewall.allowed_tcp_ports", f.AllowedTCPPorts)
		ports("hardening.firewall.allowed_udp_ports", f.AllowedUDPPorts)
	}
	if !h.Audit.Skip {
		h.Audit.validate(&p)
	}
	if s := h.Sudo; !s.Skip {
		p.cleanPath("hardening.sudo.log_file", s.LogFile)
		p.groups("hardening.sudo.revoke_groups", s.RevokeGroups)
		for i, g := range s.RevokeGroups {
			if slices.Contains(h.Roles.Admin, g) {
				p.add("hardening.sudo.revoke_groups[%d]: %s is an admin group", i, g)
			}
		}
	}
	if j := h.Journald; !j.Skip {
		switch j.Storage {
		case "persistent", "auto", "volatile":
		default:
			p.add("hardening.journald.storage: %q is not one of persistent, auto, volatile", j.Storage)
		}
		if j.SystemMaxUse != "" && !journalSize.MatchString(j.SystemMaxUse) {
			p.add("hardening.journald.system_max_use: %q is not a size such as 4G", j.SystemMaxUse)
		}
	}
	if b := h.Baseline; !b.Skip {
		b.validate(&p)
	}
	return p
}

// validate checks the baseline's names and values, which the plan writes
// into files and shell words.
func (b HardeningBaseline) validate(p *problems) {
	for _, k := range slices.Sorted(maps.Keys(b.LoginDefs)) {
		if !loginDefsKeyRe.MatchString(k) {
			p.add("hardening.baseline.login_defs: %q is not a login.defs keyword (upper-case letters, digits and _)", k)
		} else if v := b.LoginDefs[k]; !loginDefsValRe.MatchString(v) {
			p.add("hardening.baseline.login_defs.%s: %q is not a plain value", k, v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(b.Sysctl)) {
		if !sysctlKeyRe.MatchString(k) {
			p.add("hardening.baseline.sysctl: %q is not a kernel parameter such as net.ipv4.ip_forward", k)
		} else if v := b.Sysctl[k]; !sysctlValRe.MatchString(v) {
			p.add("hardening.baseline.sysctl.%s: %q is not a plain value", k, v)
		}
	}
	if v, ok := b.Sysctl["fs.suid_dumpable"]; ok && v != "0" && !b.AllowCoreDumps {
		p.add("hardening.baseline.sysctl.fs.suid_dumpable: %q lets setuid programs dump core, which the baseline turns off; set allow_core_dumps to keep it", v)
	}
	for i, m := range b.DisabledModules {
		if !moduleRe.MatchString(m) {
			p.add("hardening.baseline.disabled_modules[%d]: %q is not a kernel module name", i, m)
		}
	}
	p.twice("hardening.baseline.disabled_modules", b.DisabledModules)
}

// validate checks the role groups: names, one role per group, an admin.
func (r HardeningRoles) validate(p *problems) {
	p.groups("hardening.roles.admin", r.Admin)
	p.groups("hardening.roles.developer", r.Developer)
	p.groups("hardening.roles.auditor", r.Auditor)
	if len(r.Admin) == 0 {
		p.add("hardening.roles.admin: at least one group must hold the admin role: sudo and the second factor are granted to it")
	}
	roleOf := map[string]string{}
	for _, role := range []struct {
		name   string
		groups []string
	}{{"admin", r.Admin}, {"developer", r.Developer}, {"auditor", r.Auditor}} {
		for _, g := range role.groups {
			if other, ok := roleOf[g]; ok && other != role.name {
				p.add("hardening.roles.%s: %s already holds the %s role; a group holds one role (an auditor that is also an admin changes what it reviews)", role.name, g, other)
			}
			roleOf[g] = role.name
		}
	}
}

// validate checks the audit paths and auditd.conf's actions.
func (a HardeningAudit) validate(p *problems) {
	paths := func(field string, ps []string) {
		for i, v := range ps {
			if p.cleanPath(fmt.Sprintf("%s[%d]", field, i), v) && slices.Index(ps, v) < i {
				p.add("%s[%d]: %s is listed twice", field, i, v)
			}
		}
	}
	paths("hardening.audit.watch_paths", a.WatchPaths)
	paths("hardening.audit.exec_paths", a.ExecPaths)
	for _, kv := range a.conf() {
		if !slices.Contains(auditActions[kv.Key], kv.Value) {
			p.add("hardening.audit.%s: %q is not one of %s", kv.Key, kv.Value, strings.Join(auditActions[kv.Key], ", "))
		}
	}
}

func (h *Hardening) validateSSH(p *problems) {
	s := h.SSH
	switch s.PermitRootLogin {
	case "no", "prohibit-password", "forced-commands-only":
	case "yes":
		p.add("hardening.ssh.permit_root_login: yes lets root log in with a password; use no, prohibit-password or forced-commands-only")
	default:
		p.add("hardening.ssh.permit_root_login: %q is not one of no, prohibit-password, forced-commands-only", s.PermitRootLogin)
	}
	if err := s.validateAlgorithms(p); err != nil {
		p.add("hardening.ssh: %v", err)
		return
	}
	roles := h.roleGroups()
	for i, g := range s.AllowGroups {
		if !slices.Contains(roles, g) {
			p.add("hardening.ssh.allow_groups[%d]: %q is not a role group (%s)", i, g, strings.Join(roles, ", "))
		}
	}
	if len(s.AllowGroups) == 0 {
		p.add("hardening.ssh.allow_groups: empty; sshd would admit every account")
	}
	switch s.SecondFactor {
	case SecondFactorTOTP, SecondFactorNone:
	default:
		p.add("hardening.ssh.second_factor: %q is not one of totp, none", s.SecondFactor)
	}
	for i, g := range s.MFAGroups {
		if !slices.Contains(s.AllowGroups, g) {
			p.add("hardening.ssh.mfa_groups[%d]: %q is not in allow_groups, so it cannot log in at all", i, g)
		}
	}
	for _, n := range []struct {
		field     string
		v, lo, hi int
	}{
		{"max_auth_tries", s.MaxAuthTries, 1, 10},
		{"login_grace_time", s.LoginGraceTime, 1, 600},
		{"client_alive_interval", s.ClientAliveInterval, 1, 3600},
		{"client_alive_count_max", s.ClientAliveCountMax, 1, 10},
	} {
		if n.v < n.lo || n.v > n.hi {
			p.add("hardening.ssh.%s: %d is outside %d-%d", n.field, n.v, n.lo, n.hi)
		}
	}
	if s.LogLevel != "VERBOSE" && s.LogLevel != "INFO" {
		p.add("hardening.ssh.log_level: %q is not one of VERBOSE, INFO (quieter levels lose the login records, DEBUG logs what users type)", s.LogLevel)
	}
	if s.HostKeys != HostKeysFirstBoot && s.HostKeys != HostKeysKeep {
		p.add("hardening.ssh.host_keys: %q is not one of first_boot, keep", s.HostKeys)
	}
	p.twice("hardening.ssh.allow_groups", s.AllowGroups)
	p.twice("hardening.ssh.mfa_groups", s.MFAGroups)
}

// validateAlgorithms checks each algorithm list against what OpenSSH
// knows and what the default policy pack calls weak; the error is the
// pack's, when its defaults cannot be read.
func (s HardeningSSH) validateAlgorithms(p *problems) error {
	d, err := packDefaultsOnce()
	if err != nil {
		return err
	}
	for _, l := range []struct {
		field       string
		names, weak []string
		known       []string
	}{
		{"ciphers", s.Ciphers, d.WeakCiphers, sshCiphers},
		{"kex_algorithms", s.KexAlgorithms, d.WeakKex, sshKex},
		{"macs", s.MACs, d.WeakMACs, sshMACs},
		{"host_key_algorithms", s.HostKeyAlgorithms, d.WeakHostKeys, sshHostKeyAlgorithms},
	} {
		if len(l.names) == 0 {
			p.add("hardening.ssh.%s: empty; leave it out for the defaults", l.field)
		}
		for i, n := range l.names {
			switch {
			case weak(n, l.weak):
				p.add("hardening.ssh.%s[%d]: %s is weak (the default policy pack fails it)", l.field, i, n)
			case !slices.Contains(l.known, n):
				p.add("hardening.ssh.%s[%d]: %q is not an algorithm OpenSSH knows", l.field, i, n)
			case slices.Index(l.names, n) < i:
				p.add("hardening.ssh.%s[%d]: %s is listed twice", l.field, i, n)
			}
		}
	}
	return nil
}
