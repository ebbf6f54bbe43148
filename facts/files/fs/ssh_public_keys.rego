# METADATA
# title: sshd's public host keys are not writable by others
# description: >-
#   Every file in /etc/ssh whose name ends in .pub (the public halves of sshd's host keys) must
#   have mode 0644 or stricter, as ComplianceAsCode's OVAL for file_permissions_sshd_pub_key
#   checks them: a key someone else may replace is one clients may be told to trust. A symlink is
#   not judged, as OpenSCAP leaves it out.
# scope: package
# custom:
#   id: GH-FS-005
#   severity: medium
#   location: /etc/ssh/ssh_host_ed25519_key.pub
#   remediation: >-
#     chmod 0644 /etc/ssh/*.pub.
#   controls:
#     nist-800-53: [AC-6, AC-17, CM-6]
#     cis: ["5.2.3"]
#   targets: [rootfs, image, host, facts]
#   requires: [files]
package gpuhost.fs.ssh_public_keys

import data.gpuhost.fs.lib

deny contains {"msg": msg, "file": f.path, "subject": f.path} if {
	some f in lib.files.benchmark
	f.pattern == "/etc/ssh/*.pub"
	f.type in lib.judged_types[false]
	not lib.within(f.mode, "0644")
	msg := sprintf("%s has mode %s; want 0644 or stricter", [f.path, f.mode])
}
