# METADATA
# title: The image carries no SSH host keys
# description: >-
#   An image is copied onto every host built from it, so SSH host private keys baked into it
#   (/etc/ssh/ssh_host_*_key) would be shared by all of them: any one host, or anyone holding a
#   copy of the image, could impersonate every other to their users, and a client could not tell
#   them apart. Cloud images leave the keys out and each host makes its own at first boot, before
#   sshd starts. Applies to images and rootfs trees; a booted host needs keys of its own.
# scope: package
# custom:
#   id: GH-SSH-010
#   severity: high
#   location: /etc/ssh/ssh_host_ed25519_key
#   remediation: >-
#     Remove /etc/ssh/ssh_host_*_key and their .pub halves from the image and generate them at
#     first boot ("ssh-keygen -A" in a unit ordered before ssh.service). The gpuhost-rootfs
#     builder's disk output does both.
#   controls:
#     nist-800-53: [IA-3, SC-12]
#   targets: [rootfs, image, facts]
#   requires: [ssh]
package gpuhost.ssh.image_host_keys

deny contains {"msg": msg, "file": f, "subject": f} if {
	some f in object.get(input.ssh, "host_private_key_files", [])
	msg := sprintf("the image carries the SSH host private key %s, which every host booted from it would share", [f])
}
