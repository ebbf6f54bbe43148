# METADATA
# title: Every world-writable directory has the sticky bit
# description: >-
#   No directory on the target's local filesystems may be writable by anyone without the sticky
#   bit, which keeps each writer from deleting or renaming the others' files (/tmp is 1777). Read
#   by a walk of the whole tree, as ComplianceAsCode's dir_perms_world_writable_sticky_bits
#   does: on a host it leaves pseudo and network filesystems out, in a tree or an image it stays
#   on the tree's own filesystem, and it follows no symlink. A walk that could not see everything
#   cannot pass.
# scope: package
# custom:
#   id: GH-FS-006
#   severity: medium
#   location: /tmp
#   remediation: >-
#     chmod +t each directory named (or chmod o-w where no one else should write there).
#   controls:
#     nist-800-53: [AC-6, CM-6]
#     cis: ["1.1.22"]
#   targets: [rootfs, image, host, facts]
#   requires: [files]
package gpuhost.fs.sticky_dirs

import data.gpuhost.fs.lib

dirs := lib.tree_walk.world_writable_dirs

deny contains {"msg": sprintf("%s is writable by anyone and has no sticky bit", [p]), "file": p, "subject": p} if {
	some p in dirs.paths
}

deny contains sprintf("%d more world-writable directories without the sticky bit than the %d listed", [dirs.count - count(dirs.paths), count(dirs.paths)]) if {
	dirs.count > count(dirs.paths)
}

error contains msg if some msg in lib.walk_errors
