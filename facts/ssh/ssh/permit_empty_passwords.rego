# METADATA
# title: sshd refuses empty passwords
# description: sshd's effective PermitEmptyPasswords must be "no", so that no account with an empty password can log in over the network.
# scope: package
# custom:
#   id: GH-SSH-003
#   severity: critical
#   location: /etc/ssh/sshd_config
#   remediation: >-
#     Set "PermitEmptyPasswords no" in /etc/ssh/sshd_config, reload ssh, and lock any account
#     with an empty password (passwd -l USER).
#   controls:
#     nist-800-53: [AC-17, IA-5]
#     cis-ubuntu-22.04: ["5.2.9"]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.ssh.permit_empty_passwords

import data.gpuhost.ssh.lib

deny contains f if {
	some d in lib.daemons
	v := object.get(d, "permit_empty_passwords", "")
	lower(v) != "no"
	msg := sprintf("%s: PermitEmptyPasswords is %q; want no", [lib.name(d), v])
	f := lib.finding(msg, d, "permitemptypasswords")
}

deny contains {"msg": msg, "file": s.file, "line": s.line} if {
	some d in lib.daemons
	some s in lib.match_settings(d, "permitemptypasswords")
	lower(s.value) != "no"
	msg := sprintf("%s: %s sets PermitEmptyPasswords %q at %s; want no", [lib.name(d), s.block, s.value, s.at])
}
