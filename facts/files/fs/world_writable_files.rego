# METADATA
# title: No regular file is writable by anyone
# description: >-
#   No regular file on the target's local filesystems may be writable by anyone, as
#   ComplianceAsCode's file_permissions_unauthorized_world_writable checks: such a file is anyone's
#   to change, a program or a script others run among them. Its exceptions are OVAL's: /proc,
#   /sys and SELinux's old /selinux interface. Read by a walk of the whole tree (see GH-FS-006 for
#   what it leaves out); a walk that could not see everything cannot pass.
# scope: package
# custom:
#   id: GH-FS-007
#   severity: medium
#   location: /tmp
#   remediation: >-
#     chmod o-w each file named, and fix what created it so.
#   controls:
#     nist-800-53: [AC-6, CM-6]
#     cis: ["6.1.10"]
#   targets: [rootfs, image, host, facts]
#   requires: [files]
package gpuhost.fs.world_writable_files

import data.gpuhost.fs.lib

files := lib.tree_walk.world_writable_files

# excepted are OVAL's exclusions: paths under /proc and /sys, and the
# writable nodes of /selinux.
excepted(p) if regex.match(`^/(proc|sys)/`, p)

excepted(p) if regex.match(`^/selinux/(member|user|relabel|create|access|context)$`, p)

deny contains {"msg": sprintf("%s is writable by anyone", [p]), "file": p, "subject": p} if {
	some p in files.paths
	not excepted(p)
}

# Past the sample no path is known, so none can be excepted.
deny contains sprintf("%d more world-writable files than the %d listed", [files.count - count(files.paths), count(files.paths)]) if {
	files.count > count(files.paths)
}

error contains msg if some msg in lib.walk_errors
