# METADATA
# title: sshd offers no weak ciphers
# description: >-
#   None of the ciphers sshd offers (what it offers on the wire, read from its KEXINIT on a live host;
#   otherwise its effective Ciphers list, after Include files and with OpenSSH
#   defaults for an unset keyword) may match params.ssh_weak_ciphers. A pattern ending in "*" matches
#   every name that starts with what precedes the "*".
# scope: package
# custom:
#   id: GH-SSH-004
#   severity: high
#   location: /etc/ssh/sshd_config
#   remediation: >-
#     Set an explicit "Ciphers" line in /etc/ssh/sshd_config that lists only strong algorithms
#     (or remove the weak ones with "Ciphers -NAME,..."), check with "sshd -T", and reload ssh.
#   controls:
#     nist-800-53: [AC-17(2), SC-8, SC-13]
#     cis-ubuntu-22.04: ["5.2.13"]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.ssh.ciphers

import data.gpuhost.ssh.lib

deny contains "parameter ssh_weak_ciphers is not set" if {
	not data.gpuhost.params.ssh_weak_ciphers
}

deny contains f if {
	some d in lib.daemons
	some o in lib.offered(d, "ciphers")
	lib.matches(o.name, data.gpuhost.params.ssh_weak_ciphers)
	msg := sprintf("%s offers weak cipher %s %s", [lib.name(d), o.name, o.where])
	f := lib.finding(msg, d, "ciphers")
}
