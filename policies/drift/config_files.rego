# METADATA
# title: Configuration files are as baked
# description: >-
#   The sha256 of each configuration file the baked manifest records (containerd, docker, sshd,
#   openssl, grub, modprobe) must be unchanged; a recorded file that is gone, or a new file
#   where the manifest looks, is drift too.
# scope: package
# custom:
#   id: GH-DRIFT-008
#   severity: high
#   location: /etc/gpuhost/manifest.json
#   remediation: >-
#     Restore the file from the image (or configuration management) and find out who changed it;
#     if the change is intended, rebuild the image so that its manifest records it.
#   controls:
#     nist-800-53: [CM-2, CM-3, CM-6, SI-7]
#   targets: [rootfs, image, host, facts]
#   requires: [manifest, config_files]
package gpuhost.drift.config_files

baseline := object.get(input, ["manifest", "config_files"], [])

# live maps each path to its digests; a set, so that a document naming a
# path twice cannot make evaluation fail.
live[f.path] contains f.sha256 if some f in object.get(input, "config_files", [])

baked contains b.path if some b in baseline

# Each rule takes live whole, once: live[path] with the path bound would
# evaluate live's body over every file again for each baseline entry.
deny contains msg if {
	# regal ignore:pointless-reassignment
	digests := live
	some b in baseline
	some digest in digests[b.path]
	digest != b.sha256
	msg := sprintf("%s changed since the baseline: sha256 %s, baked %s", [b.path, substring(digest, 0, 12), substring(b.sha256, 0, 12)])
}

deny contains msg if {
	# regal ignore:pointless-reassignment
	digests := live
	some b in baseline
	not digests[b.path]
	msg := sprintf("%s is in the baseline but gone", [b.path])
}

deny contains msg if {
	input.manifest
	some path, _ in live
	not path in baked
	msg := sprintf("%s is new since the baseline", [path])
}
