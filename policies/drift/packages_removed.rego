# METADATA
# title: No baked packages were removed
# description: >-
#   Every package (by name and architecture) in the baked manifest's inventory must still be
#   installed.
# scope: package
# custom:
#   id: GH-DRIFT-003
#   severity: medium
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Reinstall the package at its baked version, or rebuild the image without it so that its
#     manifest no longer records it.
#   controls:
#     nist-800-53: [CM-2, CM-3]
#   targets: [rootfs, image, host, facts]
#   requires: [manifest, packages]
package gpuhost.drift.packages_removed

installed contains sprintf("%s:%s", [p.name, p.arch]) if some p in object.get(input, "packages", [])

deny contains msg if {
	some b in object.get(input, ["manifest", "packages"], [])
	key := sprintf("%s:%s", [b.name, b.arch])
	not key in installed
	msg := sprintf("%s %s is in the baseline but no longer installed", [key, b.version])
}
