# METADATA
# title: sshd accepts keys only, not passwords
# description: >-
#   sshd's effective PasswordAuthentication and KbdInteractiveAuthentication (formerly
#   ChallengeResponseAuthentication) must both be "no", so that no password can be guessed
#   over the network.
# scope: package
# custom:
#   id: GH-SSH-002
#   severity: high
#   remediation: >-
#     Set "PasswordAuthentication no" and "KbdInteractiveAuthentication no" in
#     /etc/ssh/sshd_config (and drop-ins under sshd_config.d that override them), then reload ssh.
#   controls:
#     nist-800-53: [AC-17, IA-2, IA-5]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.ssh.password_authentication

settings := {
	"PasswordAuthentication": "password_authentication",
	"KbdInteractiveAuthentication": "kbd_interactive_authentication",
}

deny contains msg if {
	some keyword, field in settings
	v := object.get(input.ssh, field, "")
	lower(v) != "no"
	msg := sprintf("%s is %q in the sshd configuration (%s); want no", [keyword, v, input.ssh.config_path])
}
