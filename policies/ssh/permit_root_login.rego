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
#   remediation: >-
#     Set "PermitRootLogin no" in /etc/ssh/sshd_config (before any Include that sets it, since the
#     first value wins), check with "sshd -T", and reload ssh.
#   controls:
#     nist-800-53: [AC-17, AC-6(2), IA-2]
#     cis-ubuntu-22.04: ["5.2.7"]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.ssh.permit_root_login

value := lower(input.ssh.permit_root_login)

# Where the value came from, for the message: OpenSSH's default is prohibit-password.
origin := sprintf("set in %s", [input.ssh.config_path]) if {
	"permitrootlogin" in object.get(input.ssh, "explicit", [])
} else := "OpenSSH default"

deny contains msg if {
	value == "yes"
	msg := sprintf("PermitRootLogin is yes (%s): root may log in with a password", [origin])
}

deny contains msg if {
	value in {"prohibit-password", "without-password", "forced-commands-only"}
	msg := sprintf("PermitRootLogin is %s (%s): root may still log in with a key; want no", [input.ssh.permit_root_login, origin])
}

deny contains msg if {
	not value in {"no", "yes", "prohibit-password", "without-password", "forced-commands-only"}
	msg := sprintf("PermitRootLogin has the unrecognised value %q (%s); want no", [input.ssh.permit_root_login, origin])
}
