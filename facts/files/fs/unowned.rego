# METADATA
# title: Every file is owned by an account
# description: >-
#   Every entry on the target's local filesystems that is not a directory (files, symlinks,
#   devices) must be owned by a uid that an account of /etc/passwd has, as ComplianceAsCode's
#   no_files_unowned_by_user checks: a uid no one has is the next account given that uid's, with
#   every file it owns. Read by a walk of the whole tree (see GH-FS-006 for what it leaves out); a
#   walk that could not see everything cannot pass.
# scope: package
# custom:
#   id: GH-FS-008
#   severity: medium
#   location: /etc/passwd
#   remediation: >-
#     chown each file named to its rightful account, or remove it; a package's files come back
#     right when the package is reinstalled.
#   controls:
#     nist-800-53: [AC-6, CM-6]
#     cis: ["6.1.11"]
#   targets: [rootfs, image, host, facts]
#   requires: [files, access]
package gpuhost.fs.unowned

import data.gpuhost.fs.lib

uids contains u.uid if some u in input.access.users

deny contains {"msg": msg, "file": p, "subject": p} if {
	some o in lib.tree_walk.owners
	not o.uid in uids
	some p in o.paths
	msg := sprintf("%s is owned by uid %d, which no account has", [p, o.uid])
}

deny contains msg if {
	some o in lib.tree_walk.owners
	not o.uid in uids
	o.count > count(o.paths)
	msg := sprintf("%d more files owned by uid %d, which no account has, than the %d listed", [o.count - count(o.paths), o.uid, count(o.paths)])
}

error contains msg if some msg in lib.walk_errors
