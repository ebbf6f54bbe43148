# METADATA
# title: sshd refuses empty passwords
# description: sshd's effective PermitEmptyPasswords must be "no", so that no account with an empty password can log in over the network.
# scope: package
# custom:
#   id: GH-SSH-003
#   severity: critical
#   remediation: >-
#     Set "PermitEmptyPasswords no" in /etc/ssh/sshd_config, reload ssh, and lock any account
#     with an empty password (passwd -l USER).
#   controls:
#     nist-800-53: [AC-17, IA-5]
#     cis-ubuntu-22.04: ["5.2.9"]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.ssh.permit_empty_passwords

deny contains msg if {
	v := object.get(input.ssh, "permit_empty_passwords", "")
	lower(v) != "no"
	msg := sprintf("PermitEmptyPasswords is %q in the sshd configuration (%s); want no", [v, input.ssh.config_path])
}
