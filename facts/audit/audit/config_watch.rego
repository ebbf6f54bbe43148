# METADATA
# title: Writes to the host's security configuration are recorded
# description: >-
#   A change to sudoers, sshd, gpuhost's own settings, containerd or the NVIDIA container runtime
#   changes who may do what on the host. Each path params.audit_watch_paths names must be watched
#   for writes and attribute changes (-w PATH -p wa, or an exit rule with dir= or path= and
#   perm=wa). Read from the rules auditd loads.
# scope: package
# custom:
#   id: GH-AUD-003
#   severity: high
#   location: /etc/audit/rules.d/audit.rules
#   remediation: >-
#     Add "-w PATH -p wa -k gpuhost-config" to /etc/audit/rules.d/50-gpuhost.rules for each path,
#     then run augenrules --load.
#   controls:
#     nist-800-53: [AU-2, AU-12, CM-5]
#     cis: ["6.2.3.1", "6.2.3.8"]
#   targets: [rootfs, image, host, facts]
#   requires: [audit]
package gpuhost.audit.config_watch

import data.gpuhost.audit.lib

paths := object.get(data.gpuhost.params, "audit_watch_paths", [])

skip contains "params.audit_watch_paths names no path" if count(paths) == 0

deny contains {"msg": msg, "subject": p} if {
	some p in paths
	some perm in ["w", "a"]
	not watched(p, perm)
	msg := sprintf("no audit rule records %s on %s (want -w %s -p wa)", [{"w": "writes", "a": "attribute changes"}[perm], p, p])
}

watched(p, perm) if {
	some r in input.audit.rules
	lib.watches(r, p, perm)
}
