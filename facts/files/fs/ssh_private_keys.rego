# METADATA
# title: sshd's private host keys are root's alone
# description: >-
#   Every file in /etc/ssh whose name ends in _key (sshd's private host keys) must be owned by uid
#   0 and gid 0 with mode 0600 or stricter, as ComplianceAsCode's OVAL for
#   file_permissions_sshd_private_key checks them: anyone else who reads a host key can pose as
#   the host. A symlink is not judged, as OpenSCAP leaves it out.
# scope: package
# custom:
#   id: GH-FS-004
#   severity: medium
#   location: /etc/ssh/ssh_host_ed25519_key
#   remediation: >-
#     chown root:root /etc/ssh/*_key; chmod 0600 /etc/ssh/*_key.
#   controls:
#     nist-800-53: [AC-6, AC-17, CM-6]
#     cis: ["5.2.2"]
#   targets: [rootfs, image, host, facts]
#   requires: [files]
package gpuhost.fs.ssh_private_keys

import data.gpuhost.fs.lib

deny contains {"msg": msg, "file": f.path, "subject": f.path} if {
	some f in lib.files.benchmark
	f.pattern == "/etc/ssh/*_key"
	f.type in lib.judged_types[false]
	wrong := [c.what |
		some c in [
			{"bad": f.uid != 0, "what": sprintf("is owned by uid %d", [f.uid])},
			{"bad": f.gid != 0, "what": sprintf("belongs to gid %d", [f.gid])},
			{"bad": lib.is_within(f.mode, "0600") == false, "what": sprintf("has mode %s", [f.mode])},
		]
		c.bad
	]
	count(wrong) > 0
	msg := sprintf("%s %s; want root:root (0:0) and mode 0600 or stricter", [f.path, concat(" and ", wrong)])
}
