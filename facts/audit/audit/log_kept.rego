# METADATA
# title: The audit log is kept when it fills the disk
# description: >-
#   auditd.conf decides what happens when the log reaches its size or the disk fills. ROTATE and
#   IGNORE throw records away (the oldest, or every new one) unless they are forwarded elsewhere;
#   SYSLOG only complains. The log must be kept (max_log_file_action keep_logs, or rotate while a
#   remote receives a copy), and running out of space must not be ignored. Read from
#   /etc/audit/auditd.conf with auditd's defaults for what it leaves out.
# scope: package
# custom:
#   id: GH-AUD-005
#   severity: high
#   location: /etc/audit/auditd.conf
#   remediation: >-
#     In /etc/audit/auditd.conf set max_log_file_action = keep_logs, space_left_action = email (or
#     exec), admin_space_left_action = single (or halt), disk_full_action = halt (or single) and
#     disk_error_action = halt (or single).
#   controls:
#     nist-800-53: [AU-4, AU-5, AU-9]
#     cis: ["6.2.2.2", "6.2.2.3", "6.2.2.4"]
#   targets: [rootfs, image, host, facts]
#   requires: [audit]
package gpuhost.audit.log_kept

import data.gpuhost.lib.locate

c := input.audit.config

forwarded if input.audit.remote.audisp_remote_active

forwarded if input.audit.remote.journal_upload

deny contains finding if {
	c.max_log_file_action in {"rotate", "ignore", "syslog"}
	not forwarded
	msg := sprintf("%s: max_log_file_action %s loses records once the log is full and nothing forwards them", [c.path, c.max_log_file_action])
	finding := at(msg, "max_log_file_action")
}

deny contains finding if {
	c.max_log_file_action == "ignore"
	forwarded
	msg := sprintf("%s: max_log_file_action ignore stops writing records once the log is full", [c.path])
	finding := at(msg, "max_log_file_action")
}

deny contains finding if {
	some name, value in {
		"space_left_action": c.space_left_action,
		"admin_space_left_action": c.admin_space_left_action,
		"disk_full_action": c.disk_full_action,
		"disk_error_action": c.disk_error_action,
	}
	loses(value)
	msg := sprintf("%s: %s %s %s when the disk runs out", [c.path, name, value, effect[value]])
	finding := at(msg, name)
}

loses("ignore")

loses("rotate") if not forwarded

effect := {"ignore": "drops every new record", "rotate": "deletes the oldest records"}

# at places msg on the auditd.conf line that sets setting; a setting left at
# auditd's default has no line, and the message stands alone.
at(msg, setting) := locate.at(msg, l.file, l.line) if {
	l := c.locations[setting]
} else := msg
