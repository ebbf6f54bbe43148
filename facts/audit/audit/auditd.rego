# METADATA
# title: auditd is installed and runs
# description: >-
#   Every privileged action on a GPU host must leave a record that outlives the session that made
#   it: the kernel's audit subsystem records it and auditd writes it down. This check needs auditd
#   installed and its unit enabled, and on a live host running. Without it, none of the audit
#   rules below record anything.
# scope: package
# custom:
#   id: GH-AUD-001
#   severity: high
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Install auditd (apt-get install auditd) and enable it (systemctl enable --now auditd).
#   controls:
#     nist-800-53: [AU-2, AU-12]
#     cis: ["6.2.1.1", "6.2.1.2"]
#   targets: [rootfs, image, host, facts]
#   requires: [audit]
package gpuhost.audit.auditd

a := input.audit

deny contains "auditd is not installed (no /sbin/auditd or /usr/sbin/auditd): privileged actions leave no record" if not a.installed

deny contains "auditd.service is not enabled: the audit rules are never loaded at boot" if {
	a.installed
	not a.enabled
}

deny contains sprintf("auditd.service is %s, not active: nothing is recorded now", [a.active]) if {
	input.target.kind == "host"
	a.installed
	a.active != "active"
}
