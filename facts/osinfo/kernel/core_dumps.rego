# METADATA
# title: Core dumps are disabled
# description: >-
#   A core dump can hold a process's secrets. pam_limits must give every login a hard core size
#   limit of 0 ("* hard core 0" in /etc/security/limits.conf or limits.d, the last such line in the
#   order pam_limits reads them), and fs.suid_dumpable must be 0 so that setuid programs never dump,
#   configured in sysctl.d (and, on a live host, in the running kernel) as GH-KRN-002 judges it.
# scope: package
# custom:
#   id: GH-KRN-003
#   severity: medium
#   location: /etc/security/limits.d/60-cis.conf
#   remediation: >-
#     Add "* hard core 0" to /etc/security/limits.d/60-cis.conf and "fs.suid_dumpable = 0" to
#     /etc/sysctl.d/60-cis.conf, then run "sysctl --system"; the limit applies from the next login.
#   controls:
#     cis-ubuntu-22.04: ["1.6.4"]
#     nist-800-53: [CM-6, SC-7(10), SI-11]
#   targets: [rootfs, image, host, facts]
#   requires: [limits, sysctl]
package gpuhost.kernel.core_dumps

import data.gpuhost.kernel.lib
import data.gpuhost.lib.locate

# The lines that set everyone's hard core size limit, in the order
# pam_limits reads them: the last one holds.
hard_core := [e |
	some e in input.limits.entries
	e.domain == "*"
	e.item == "core"
	e.type in {"hard", "-"}
]

deny contains {"msg": "no line of /etc/security/limits.conf or limits.d sets \"* hard core 0\", so every login may dump core", "subject": "* hard core"} if {
	count(hard_core) == 0
}

deny contains object.union({"msg": msg, "subject": "* hard core"}, locate.place(e.file, e.line)) if {
	e := hard_core[count(hard_core) - 1]
	e.value != "0"
	msg := sprintf("everyone's hard core size limit is %s (%s:%d); want 0", [e.value, e.file, e.line])
}

deny contains object.union({"msg": msg, "subject": "fs.suid_dumpable"}, lib.place("fs.suid_dumpable")) if {
	msg := lib.problem("fs.suid_dumpable", "0")
}
