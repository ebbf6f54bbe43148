# METADATA
# title: sshd offers no weak MACs
# description: >-
#   None of the MACs sshd offers (what it offers on the wire, read from its KEXINIT on a live host;
#   otherwise its effective MACs list, after Include files and with OpenSSH
#   defaults for an unset keyword) may match params.ssh_weak_macs. A pattern ending in "*" matches
#   every name that starts with what precedes the "*".
# scope: package
# custom:
#   id: GH-SSH-006
#   severity: high
#   location: /etc/ssh/sshd_config
#   remediation: >-
#     Set an explicit "MACs" line in /etc/ssh/sshd_config that lists only strong algorithms
#     (or remove the weak ones with "MACs -NAME,..."), check with "sshd -T", and reload ssh.
#   controls:
#     nist-800-53: [AC-17(2), SC-8, SC-13]
#     cis-ubuntu-22.04: ["5.2.14"]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.ssh.macs

import data.gpuhost.ssh.lib

deny contains "parameter ssh_weak_macs is not set" if {
	not data.gpuhost.params.ssh_weak_macs
}

deny contains f if {
	some d in lib.daemons
	some o in lib.offered(d, "macs")
	lib.matches(o.name, data.gpuhost.params.ssh_weak_macs)
	msg := sprintf("%s offers weak MAC %s %s", [lib.name(d), o.name, o.where])
	f := lib.finding(msg, d, "macs")
}
