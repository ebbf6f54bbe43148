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

s := input.access.sudo

skip contains "sudo is not installed (no /etc/sudoers)" if not s

set(name) if {
	some d in s.defaults
	d.scope == ""
	d.name == name
	not d.negated
}

deny contains sprintf("sudoers (%s) does not set Defaults use_pty", [concat(", ", s.files)]) if {
	s
	not set("use_pty")
}

deny contains sprintf("sudoers (%s) keeps no log of what sudo ran (Defaults logfile, log_output or log_servers)", [concat(", ", s.files)]) if {
	s
	not set("logfile")
	not set("log_output")
	not set("log_servers")
}
