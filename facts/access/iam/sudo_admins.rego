# METADATA
# title: Only administrators may run any command as root
# description: >-
#   A sudo rule that allows ALL commands is root access. Only the admin role's groups
#   (params.roles.admin) and root may hold one; a developer may be given named commands for their
#   project, never ALL, and never without a password. Read from /etc/sudoers and every file it
#   includes, aliases expanded. Not applicable where sudo is not installed.
# scope: package
# custom:
#   id: GH-IAM-002
#   severity: high
#   location: /etc/sudoers
#   remediation: >-
#     Grant ALL only to the admin group ("%gpuhost-admin ALL=(ALL:ALL) ALL") and give other roles the
#     commands they need by name, without NOPASSWD.
#   controls:
#     nist-800-53: [AC-6, AC-6(1), AC-6(5)]
#   targets: [rootfs, image, host, facts]
#   requires: [access]
package gpuhost.iam.sudo_admins

import data.gpuhost.iam.lib

skip contains "sudo is not installed (no /etc/sudoers)" if not input.access.sudo

outside_admin(p) if {
	p != "root"
	not lib.in_role(p, "admin")
}

deny contains {"msg": msg, "subject": p, "file": r.file, "line": r.line} if {
	some r in input.access.sudo.rules
	r.all_commands
	some p in r.users
	outside_admin(p)
	msg := sprintf(
		"%s:%d lets %s run any command as %s, and %s is not in an admin group (%s)",
		[r.file, r.line, p, concat(",", r.run_as), p, concat(",", sort(lib.role_groups("admin")))],
	)
}

deny contains {"msg": msg, "subject": p, "file": r.file, "line": r.line} if {
	some r in input.access.sudo.rules
	r.no_passwd
	not r.all_commands
	some p in r.users
	outside_admin(p)
	lib.in_role(p, "developer")
	msg := sprintf("%s:%d lets %s run %s as root without a password", [r.file, r.line, p, concat(", ", r.commands)])
}
