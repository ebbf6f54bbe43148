# METADATA
# title: Every interactive user's home directory exists
# description: >-
#   Every interactive user (uid 1000 or more, nobody aside, as ComplianceAsCode counts them) must
#   have a home directory of their own that exists: one that is missing leaves a login in /, and
#   one made later may be made by someone else. As OpenSCAP's rule counts one existing directory
#   per interactive user, two users who share a home fail it too. A home that is a symlink exists
#   when it leads to a directory inside the target.
# scope: package
# custom:
#   id: GH-FS-010
#   severity: medium
#   location: /etc/passwd
#   remediation: >-
#     Create each missing home (mkhomedir_helper USER, or mkdir, chown and chmod 0750), or give the
#     account an existing one (usermod -d); give each user a home of their own.
#   controls:
#     nist-800-53: [AC-6, CM-6]
#     cis: ["6.2.4"]
#   targets: [rootfs, image, host, facts]
#   requires: [files]
package gpuhost.fs.homes_exist

import data.gpuhost.fs.lib

homes := [h | some h in lib.files.homes; h.uid >= lib.min_id; h.user != "nobody"]

deny contains {"msg": msg, "file": h.path, "subject": h.path} if {
	some h in homes
	not h.is_dir
	msg := sprintf("%s's home directory %s does not exist", [h.user, h.path])
}

deny contains {"msg": msg, "file": p, "subject": p} if {
	some p in {h.path | some h in homes; h.is_dir}
	users := sort({h.user | some h in homes; h.path == p})
	count(users) > 1
	msg := sprintf(
		"%s is the home directory of %d interactive users (%s); OpenSCAP's rule counts one home directory per interactive user",
		[p, count(users), concat(", ", users)],
	)
}

error contains msg if some msg in lib.homes_errors
