# METADATA
# title: Interactive users' home directories are 0750 or stricter
# description: >-
#   The home directory of every interactive user (uid 1000 or more, nobody aside, as
#   ComplianceAsCode counts them) must be a directory of mode 0750 or stricter: no one outside
#   the user's group reads it, and no one but the user writes it. A home that is a symlink to a
#   directory fails, as OpenSCAP's item for it is the link; a home that does not exist is for
#   GH-FS-010.
# scope: package
# custom:
#   id: GH-FS-009
#   severity: medium
#   location: /etc/passwd
#   remediation: >-
#     chmod 0750 (or 0700) each home directory named; set HOME_MODE 0750 in /etc/login.defs so that
#     new ones are made so.
#   controls:
#     nist-800-53: [AC-6, CM-6]
#     cis: ["6.2.5"]
#   targets: [rootfs, image, host, facts]
#   requires: [files]
package gpuhost.fs.home_modes

import data.gpuhost.fs.lib

homes := [h | some h in lib.files.homes; h.uid >= lib.min_id; h.user != "nobody"; h.is_dir]

users(p) := concat(", ", sort({h.user | some h in homes; h.path == p}))

deny contains {"msg": msg, "file": h.path, "subject": h.path} if {
	some h in homes
	h.type != "directory"
	msg := sprintf("%s, the home directory of %s, is a %s to a directory; OpenSCAP's rule wants the directory itself", [h.path, users(h.path), h.type])
}

deny contains {"msg": msg, "file": h.path, "subject": h.path} if {
	some h in homes
	h.type == "directory"
	not lib.within(h.mode, "0750")
	msg := sprintf("%s, the home directory of %s, has mode %s; want 0750 or stricter", [h.path, users(h.path), h.mode])
}

error contains msg if some msg in lib.homes_errors
