# METADATA
# title: Interactive users' dot files belong to an interactive user's group
# description: >-
#   Every dot file (an entry named with a leading dot that is not a directory) in the home
#   directory of a user whose primary gid is 1000 or more (nobody aside), or in a directory
#   directly below it, must belong to exactly one such user's primary group, as
#   ComplianceAsCode's accounts_user_dot_group_ownership checks: a group that should not write a
#   user's startup files may. OpenSCAP's test takes any of those users' gids and fails a gid that
#   is two users' primary group, so users who share a primary group fail it.
# scope: package
# custom:
#   id: GH-FS-012
#   severity: medium
#   location: /etc/passwd
#   remediation: >-
#     chgrp each file named to the primary group of the user whose home it is in (chgrp -h for a
#     symlink); give each user a primary group of their own.
#   controls:
#     nist-800-53: [AC-6, CM-6]
#     cis: ["6.2.7"]
#   targets: [rootfs, image, host, facts]
#   requires: [files]
package gpuhost.fs.dot_group

import data.gpuhost.fs.lib

homes := [h | some h in lib.files.homes; h.gid >= lib.min_id; h.user != "nobody"]

home_paths contains h.path if some h in homes

gids := [h.gid | some h in homes]

deny contains {"msg": msg, "file": d.path, "subject": d.path} if {
	some d in lib.files.dot_files
	d.home in home_paths
	count([g | some g in gids; g == d.gid]) == 0
	msg := sprintf("%s belongs to gid %d, no interactive user's primary group", [d.path, d.gid])
}

deny contains {"msg": msg, "file": d.path, "subject": d.path} if {
	some d in lib.files.dot_files
	d.home in home_paths
	n := count([g | some g in gids; g == d.gid])
	n > 1
	msg := sprintf("%s belongs to gid %d, the primary group of %d interactive users; OpenSCAP's rule wants it to be exactly one's", [d.path, d.gid, n])
}

error contains msg if some msg in lib.homes_errors
