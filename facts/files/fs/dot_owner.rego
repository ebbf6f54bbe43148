# METADATA
# title: Interactive users' dot files are owned by an interactive user
# description: >-
#   Every dot file (an entry named with a leading dot that is not a directory: .bashrc, .profile,
#   a symlink such as .bash_history) in an interactive user's home directory, or in a directory
#   directly below it, must be owned by exactly one interactive user's uid, as ComplianceAsCode's
#   accounts_user_dot_user_ownership checks: a startup file someone else owns runs their code at
#   every login. Interactive users are those of uid 1000 or more, nobody aside; OpenSCAP's test
#   takes any of their uids, not only the home's own user's, and fails a uid two accounts share.
# scope: package
# custom:
#   id: GH-FS-011
#   severity: medium
#   location: /etc/passwd
#   remediation: >-
#     chown each file named to the user whose home it is in (chown -h for a symlink).
#   controls:
#     nist-800-53: [AC-6, CM-6]
#     cis: ["6.2.7"]
#   targets: [rootfs, image, host, facts]
#   requires: [files]
package gpuhost.fs.dot_owner

import data.gpuhost.fs.lib

homes := [h | some h in lib.files.homes; h.uid >= lib.min_id; h.user != "nobody"]

home_paths contains h.path if some h in homes

uids := [h.uid | some h in homes]

deny contains {"msg": msg, "file": d.path, "subject": d.path} if {
	some d in lib.files.dot_files
	d.home in home_paths
	count([u | some u in uids; u == d.uid]) == 0
	msg := sprintf("%s is owned by uid %d, no interactive user's", [d.path, d.uid])
}

deny contains {"msg": msg, "file": d.path, "subject": d.path} if {
	some d in lib.files.dot_files
	d.home in home_paths
	n := count([u | some u in uids; u == d.uid])
	n > 1
	msg := sprintf("%s is owned by uid %d, which %d interactive users share; OpenSCAP's rule wants it to be exactly one's", [d.path, d.uid, n])
}

error contains msg if some msg in lib.homes_errors
