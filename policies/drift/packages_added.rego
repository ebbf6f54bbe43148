# METADATA
# title: No packages were installed since the build
# description: >-
#   Every installed package (by name and architecture) must be in the baked manifest's
#   inventory. A package installed after the build is software the image was never
#   scanned or approved with.
# scope: package
# custom:
#   id: GH-DRIFT-002
#   severity: medium
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Remove the package ("apt-get purge NAME") or, if it belongs on the host, add it to the image
#     template and rebuild so that its manifest records it.
#   controls:
#     nist-800-53: [CM-2, CM-7, CM-11]
#   targets: [rootfs, image, host, facts]
#   requires: [manifest, packages]
package gpuhost.drift.packages_added

baked contains sprintf("%s:%s", [b.name, b.arch]) if some b in object.get(input, ["manifest", "packages"], [])

deny contains msg if {
	input.manifest
	some p in object.get(input, "packages", [])
	key := sprintf("%s:%s", [p.name, p.arch])
	not key in baked
	msg := sprintf("%s %s is installed but not in the baseline", [key, p.version])
}
