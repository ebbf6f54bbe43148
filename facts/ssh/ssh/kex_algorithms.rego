# METADATA
# title: sshd offers no weak key exchange algorithms
# description: >-
#   None of the key exchange algorithms sshd offers (what it offers on the wire, read from its KEXINIT on a live host;
#   otherwise its effective KexAlgorithms list, after Include files and with OpenSSH
#   defaults for an unset keyword) may match params.ssh_weak_kex. A pattern ending in "*" matches
#   every name that starts with what precedes the "*".
# scope: package
# custom:
#   id: GH-SSH-005
#   severity: high
#   location: /etc/ssh/sshd_config
#   remediation: >-
#     Set an explicit "KexAlgorithms" line in /etc/ssh/sshd_config that lists only strong algorithms
#     (or remove the weak ones with "KexAlgorithms -NAME,..."), check with "sshd -T", and reload ssh.
#   controls:
#     nist-800-53: [AC-17(2), SC-8, SC-13]
#     cis-ubuntu-22.04: ["5.2.15"]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.ssh.kex_algorithms

import data.gpuhost.ssh.lib

deny contains "parameter ssh_weak_kex is not set" if {
	not data.gpuhost.params.ssh_weak_kex
}

deny contains f if {
	some d in lib.daemons
	some o in lib.offered(d, "kex_algorithms")
	lib.matches(o.name, data.gpuhost.params.ssh_weak_kex)
	msg := sprintf("%s offers weak key exchange algorithm %s %s", [lib.name(d), o.name, o.where])
	f := lib.finding(msg, d, "kexalgorithms")
}
