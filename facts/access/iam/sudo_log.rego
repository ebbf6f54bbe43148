# METADATA
# title: sudo runs commands on a pseudo-terminal and logs them
# description: >-
#   Defaults use_pty keeps a command run with sudo from pushing input into the caller's terminal
#   after sudo exits, and a sudo log (Defaults logfile, log_output or log_servers) keeps what was
#   run beside the audit trail. Read from sudoers with its includes; not applicable where sudo is
#   not installed.
# scope: package
# custom:
#   id: GH-IAM-004
#   severity: medium
#   location: /etc/sudoers
#   remediation: >-
#     Add "Defaults use_pty" and "Defaults logfile=/var/log/sudo.log" to /etc/sudoers.d/50-gpuhost
#     (visudo -f).
#   controls:
#     nist-800-53: [AU-2, AC-6(9)]
#     cis: ["5.2.2", "5.2.3"]
#   targets: [rootfs, image, host, facts]
#   requires: [access]
package gpuhost.iam.sudo_log

import data.gpuhost.lib.locate

s := input.access.sudo

skip contains "sudo is not installed (no /etc/sudoers)" if not s

set(name) if {
	some d in s.defaults
	d.scope == ""
	d.name == name
	not d.negated
}

deny contains finding if {
	s
	not set("use_pty")
	msg := sprintf("sudoers (%s) does not set Defaults use_pty", [concat(", ", s.files)])
	finding := turned_off(msg, {"use_pty"})
}

deny contains finding if {
	s
	not set("logfile")
	not set("log_output")
	not set("log_servers")
	msg := sprintf("sudoers (%s) keeps no log of what sudo ran (Defaults logfile, log_output or log_servers)", [concat(", ", s.files)])
	finding := turned_off(msg, {"logfile", "log_output", "log_servers"})
}

# turned_off places msg on the last Defaults line that turns one of names
# off for every use (Defaults !use_pty), the line to change; a setting that
# is merely missing has no line, and the message stands alone.
turned_off(msg, names) := locate.at(msg, last.file, last.line) if {
	offs := [d | some d in s.defaults; d.scope == ""; d.name in names; d.negated]
	last := offs[count(offs) - 1]
} else := msg
