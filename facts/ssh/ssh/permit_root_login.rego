# METADATA
# title: sshd refuses root logins
# description: >-
#   sshd's effective PermitRootLogin must be "no". "yes" lets root log in with a password;
#   prohibit-password (without-password) and forced-commands-only still let root in with a key,
#   which bypasses per-user accountability.
# scope: package
# custom:
#   id: GH-SSH-001
#   severity: high
#   location: /etc/ssh/sshd_config
#   remediation: >-
#     Set "PermitRootLogin no" in /etc/ssh/sshd_config (before any Include that sets it, since the
#     first value wins), check with "sshd -T", and reload ssh.
#   controls:
#     nist-800-53: [AC-17, AC-6(2), IA-2]
#     cis-ubuntu-22.04: ["5.2.7"]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.ssh.permit_root_login

import data.gpuhost.ssh.lib

known := {"no", "yes", "prohibit-password", "without-password", "forced-commands-only"}

# Where a daemon's value came from, for the message: OpenSSH's default is prohibit-password.
origin(d) := sprintf("set in %s", [d.config_path]) if {
	"permitrootlogin" in object.get(d, "explicit", [])
} else := "OpenSSH default"

# Why a value other than "no" lets root in.
why("yes") := "root may log in with a password"

why(v) := "root may still log in with a key" if v in {"prohibit-password", "without-password", "forced-commands-only"}

why(v) := "an unrecognised value" if not v in known

deny contains f if {
	some d in lib.daemons
	v := lower(d.permit_root_login)
	v != "no"
	msg := sprintf("%s: PermitRootLogin is %s (%s): %s; want no", [lib.name(d), d.permit_root_login, origin(d), why(v)])
	f := lib.finding(msg, d, "permitrootlogin")
}

deny contains {"msg": msg, "file": s.file, "line": s.line} if {
	some d in lib.daemons
	some s in lib.match_settings(d, "permitrootlogin")
	v := lower(s.value)
	v != "no"
	msg := sprintf("%s: %s sets PermitRootLogin %s at %s: %s; want no", [lib.name(d), s.block, s.value, s.at, why(v)])
}

# The daemon runs an older configuration than the file judged above.
deny contains f if {
	some d in lib.daemons
	some f in lib.older(d)
}
