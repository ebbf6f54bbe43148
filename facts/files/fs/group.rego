# METADATA
# title: The files CIS names belong to root's group, /etc/shadow to shadow's
# description: >-
#   Each file the CIS benchmark names must be group-owned by the gid params.files_group gives for
#   it: /etc/passwd, group, gshadow and their backups, /etc/crontab and the cron directories,
#   cron.allow and at.allow, /etc/issue, /etc/motd and sshd_config gid 0, /etc/shadow and
#   /etc/shadow- gid 42 (Ubuntu's shadow group), as ComplianceAsCode's OVAL checks them. As
#   OpenSCAP does, a missing file or a symlink is not judged, nor a cron directory's path holding
#   something else. The group is read by number.
# scope: package
# custom:
#   id: GH-FS-002
#   severity: medium
#   location: /etc/passwd
#   remediation: >-
#     chgrp each file named to its group (chgrp shadow /etc/shadow, chgrp root /etc/crontab), in the
#     image's provisioning or on the host.
#   controls:
#     nist-800-53: [AC-6, CM-6]
#     cis: ["1.8.1.4", "1.8.1.5", "5.1.2", "5.1.3", "5.1.4", "5.1.5", "5.1.6", "5.1.7",
#       "5.1.8", "5.1.9", "5.2.1", "6.1.2", "6.1.3", "6.1.4", "6.1.5", "6.1.6", "6.1.7", "6.1.8", "6.1.9"]
#   targets: [rootfs, image, host, facts]
#   requires: [files]
package gpuhost.fs.group

import data.gpuhost.fs.lib

deny contains "parameter files_group is not set" if not data.gpuhost.params.files_group

deny contains {"msg": msg, "file": f.path, "subject": f.path} if {
	some f in lib.files.benchmark
	f.type in lib.judged_types[f.directory]
	want := data.gpuhost.params.files_group[f.pattern]
	f.gid != want
	msg := sprintf("%s belongs to gid %d%s; want gid %d", [f.path, f.gid, lib.named(object.get(f, "group", "")), want])
}

error contains msg if some msg in lib.unknown_params("files_group", object.get(data.gpuhost.params, "files_group", {}))
