# METADATA
# title: The files CIS names are owned by root
# description: >-
#   Each file the CIS benchmark names must be owned by the uid params.files_owner gives for it:
#   /etc/passwd, shadow, group, gshadow and their backups, /etc/crontab and the cron directories,
#   cron.allow and at.allow, /etc/issue and /etc/motd, /boot/grub/grub.cfg and sshd_config, each
#   uid 0 by default, as ComplianceAsCode's OVAL checks them. As OpenSCAP does, a missing file or a
#   symlink is not judged, nor a cron directory's path holding something else. The owner is read
#   by number, from the tree (an image's inodes, a host's stat).
# scope: package
# custom:
#   id: GH-FS-001
#   severity: medium
#   location: /etc/passwd
#   remediation: >-
#     chown each file named to its owner (chown root /etc/shadow), in the image's provisioning or
#     on the host; the benchmark's own remediation is the same command.
#   controls:
#     nist-800-53: [AC-6, CM-6]
#     cis: ["1.5.2", "1.8.1.4", "1.8.1.5", "5.1.2", "5.1.3", "5.1.4", "5.1.5", "5.1.6", "5.1.7",
#       "5.1.8", "5.1.9", "5.2.1", "6.1.2", "6.1.3", "6.1.4", "6.1.5", "6.1.6", "6.1.7", "6.1.8", "6.1.9"]
#   targets: [rootfs, image, host, facts]
#   requires: [files]
package gpuhost.fs.owner

import data.gpuhost.fs.lib

deny contains "parameter files_owner is not set" if not data.gpuhost.params.files_owner

deny contains {"msg": msg, "file": f.path, "subject": f.path} if {
	some f in lib.files.benchmark
	f.type in lib.judged_types[f.directory]
	want := data.gpuhost.params.files_owner[f.pattern]
	f.uid != want
	msg := sprintf("%s is owned by uid %d%s; want uid %d", [f.path, f.uid, lib.named(object.get(f, "owner", "")), want])
}

error contains msg if some msg in lib.unknown_params("files_owner", object.get(data.gpuhost.params, "files_owner", {}))
