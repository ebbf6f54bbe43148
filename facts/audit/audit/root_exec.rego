# METADATA
# title: Commands run as root and by logged-in users are recorded
# description: >-
#   Audit rules must record every execve by uid 0 and by users who logged in (auid 1000 and up,
#   which covers the members of the admin roles), for both the 64-bit and the 32-bit system call
#   tables: a 32-bit execve bypasses a rule written only for arch=b64. Read from the rules
#   auditd loads (rules.d, as augenrules joins it, or audit.rules).
# scope: package
# custom:
#   id: GH-AUD-002
#   severity: high
#   location: /etc/audit/rules.d/audit.rules
#   remediation: >-
#     Add to /etc/audit/rules.d/50-gpuhost.rules:
#     "-a always,exit -F arch=b64 -S execve -F euid=0 -k root-exec",
#     "-a always,exit -F arch=b32 -S execve -F euid=0 -k root-exec",
#     "-a always,exit -F arch=b64 -S execve -F auid>=1000 -F auid!=unset -k user-exec" and the same
#     for arch=b32, then run augenrules --load.
#   controls:
#     nist-800-53: [AU-2, AU-12, AC-6(9)]
#     cis: ["6.2.3.2", "6.2.3.3"]
#   targets: [rootfs, image, host, facts]
#   requires: [audit]
package gpuhost.audit.root_exec

import data.gpuhost.audit.lib

# A rule records execve for arch when it is on the exit list, always, and
# either names no arch (every table) or that one.
records(r, arch) if {
	r.kind == "syscall"
	r.list == "exit"
	r.action == "always"
	r.arch in {"", arch}
	some s in r.syscalls
	s in {"execve", "all"}
}

# Its filter admits uid 0: none on the uid, or euid/uid = 0.
admits_root(r) if not lib.filters_uid(r)

admits_root(r) if {
	some f in r.fields
	f.name in {"euid", "uid"}
	f.op == "="
	f.value in {"0", "root"}
}

# Its filter admits every login: none on the uid, or auid >= 1000 (or
# greater than 999).
admits_logins(r) if not lib.filters_uid(r)

admits_logins(r) if {
	some f in r.fields
	f.name in {"auid", "loginuid"}
	[f.op, f.value] in {[">=", "1000"], [">", "999"]}
}

deny contains sprintf("no audit rule records execve by root for arch=%s (want -a always,exit -F arch=%s -S execve -F euid=0)", [arch, arch]) if {
	some arch in ["b64", "b32"]
	not any_root(arch)
}

deny contains sprintf("no audit rule records execve by logged-in users for arch=%s (want -a always,exit -F arch=%s -S execve -F auid>=1000)", [arch, arch]) if {
	some arch in ["b64", "b32"]
	not any_logins(arch)
}

any_root(arch) if {
	some r in input.audit.rules
	records(r, arch)
	admits_root(r)
}

any_logins(arch) if {
	some r in input.audit.rules
	records(r, arch)
	admits_logins(r)
}
