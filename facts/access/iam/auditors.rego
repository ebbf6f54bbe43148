# METADATA
# title: Auditors read and never change
# description: >-
#   The auditor role (params.roles.auditor) reviews the host: it must hold no sudo rule at all and
#   be able to write nothing under /etc. Nothing under /etc may be writable by everyone either.
#   Read from sudoers with its includes, /etc/group and the modes and groups of what is under /etc.
# scope: package
# custom:
#   id: GH-IAM-003
#   severity: high
#   location: /etc/sudoers
#   remediation: >-
#     Remove the auditors' sudo rules; chgrp root and chmod g-w,o-w what under /etc they could write.
#   controls:
#     nist-800-53: [AC-6, AC-5]
#   targets: [rootfs, image, host, facts]
#   requires: [access]
package gpuhost.iam.auditors

import data.gpuhost.iam.lib

deny contains {"msg": msg, "subject": p, "file": r.file, "line": r.line} if {
	some r in input.access.sudo.rules
	some p in r.users
	lib.in_role(p, "auditor")
	msg := sprintf("%s:%d gives %s, an auditor, sudo (%s)", [r.file, r.line, p, concat(", ", r.commands)])
}

deny contains {"msg": msg, "subject": w.path} if {
	some w in input.access.etc_writable
	w.group_writable
	w.group in lib.role_groups("auditor")
	msg := sprintf("%s (%s) is writable by %s, an auditor group", [w.path, w.mode, w.group])
}

deny contains {"msg": sprintf("%s (%s) is writable by everyone", [w.path, w.mode]), "subject": w.path} if {
	some w in input.access.etc_writable
	w.world_writable
}
