# METADATA
# title: The files CIS names are no more open than its modes
# description: >-
#   Each file the CIS benchmark names must have the mode params.files_mode gives for it, or a
#   stricter one: no permission bit, nor setuid, setgid or sticky, that the mode leaves clear. The
#   defaults are ComplianceAsCode's: /etc/passwd, group, issue, motd and their kind 0644, shadow and
#   gshadow and their backups 0000, crontab and sshd_config 0600, the cron directories 0700,
#   cron.allow and at.allow 0640, grub.cfg 0600. As OpenSCAP does, a missing file or a symlink is
#   not judged, nor a cron directory's path holding something else.
# scope: package
# custom:
#   id: GH-FS-003
#   severity: medium
#   location: /etc/passwd
#   remediation: >-
#     chmod each file named to its mode (chmod 0600 /etc/ssh/sshd_config, chmod 0700 /etc/cron.d), in
#     the image's provisioning or on the host.
#   controls:
#     nist-800-53: [AC-6, CM-6]
#     cis: ["1.5.2", "1.8.1.4", "1.8.1.5", "5.1.2", "5.1.3", "5.1.4", "5.1.5", "5.1.6", "5.1.7",
#       "5.1.8", "5.1.9", "5.2.1", "6.1.2", "6.1.3", "6.1.4", "6.1.5", "6.1.6", "6.1.7", "6.1.8", "6.1.9"]
#   targets: [rootfs, image, host, facts]
#   requires: [files]
package gpuhost.fs.mode

import data.gpuhost.fs.lib

deny contains "parameter files_mode is not set" if not data.gpuhost.params.files_mode

deny contains {"msg": msg, "file": f.path, "subject": f.path} if {
	some f in lib.files.benchmark
	f.type in lib.judged_types[f.directory]
	want := data.gpuhost.params.files_mode[f.pattern]
	not lib.within(f.mode, want)
	msg := sprintf("%s has mode %s; want %s or stricter", [f.path, f.mode, want])
}

error contains msg if some msg in lib.unknown_params("files_mode", object.get(data.gpuhost.params, "files_mode", {}))
