# METADATA
# title: sshd offers no weak MACs
# description: >-
#   None of the MACs sshd offers (its effective MACs list, after Include files and with OpenSSH
#   defaults for an unset keyword) may match params.ssh_weak_macs. A pattern ending in "*" matches
#   every name that starts with what precedes the "*".
# scope: package
# custom:
#   id: GH-SSH-006
#   severity: high
#   remediation: >-
#     Set an explicit "MACs" line in /etc/ssh/sshd_config that lists only strong algorithms
#     (or remove the weak ones with "MACs -NAME,..."), check with "sshd -T", and reload ssh.
#   controls:
#     nist-800-53: [AC-17(2), SC-8, SC-13]
#     cis-ubuntu-22.04: ["5.2.14"]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.ssh.macs

# The patterns, lowered once per evaluation rather than once per offered
# algorithm: exact names as a set, and the prefixes of those ending in "*".
weak_names := {lower(p) | some p in data.gpuhost.params.ssh_weak_macs}

weak_prefixes := {lower(trim_suffix(p, "*")) | some p in data.gpuhost.params.ssh_weak_macs; endswith(p, "*")}

weak(name) if lower(name) in weak_names

weak(name) if {
	some prefix in weak_prefixes
	startswith(lower(name), prefix)
}

deny contains "parameter ssh_weak_macs is not set" if {
	not data.gpuhost.params.ssh_weak_macs
}

deny contains msg if {
	some name in object.get(input.ssh, "macs", [])
	weak(name)
	msg := sprintf("sshd (%s) offers weak MAC %s", [input.ssh.config_path, name])
}
