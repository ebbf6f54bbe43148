# METADATA
# title: Packages are at their baked versions
# description: >-
#   Every package in the baked manifest's inventory that is still installed must carry the
#   version it was baked with (matched by name and architecture). A package upgraded or
#   downgraded since the build is drift.
# scope: package
# custom:
#   id: GH-DRIFT-001
#   severity: high
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Reinstall the baked version ("apt-get install --allow-downgrades NAME=VERSION") or, if the
#     change is intended, rebuild the image so that its manifest records it.
#   controls:
#     nist-800-53: [CM-2, CM-3, CM-6]
#   targets: [rootfs, image, host, facts]
#   requires: [manifest, packages]
package gpuhost.drift.packages_changed

baseline := object.get(input, ["manifest", "packages"], [])

# live groups installed versions by name:arch; a set, so that a document
# naming a package twice cannot make evaluation fail.
live[key] contains p.version if {
	some p in object.get(input, "packages", [])
	key := sprintf("%s:%s", [p.name, p.arch])
}

deny contains msg if {
	# live is taken whole, once: a lookup live[key] with the key bound
	# evaluates the rule's body over every installed package again, which
	# made a 1,500-package host cost 1,500 x 1,500 steps.
	# regal ignore:pointless-reassignment
	versions := live
	some b in baseline
	key := sprintf("%s:%s", [b.name, b.arch])
	some v in versions[key]
	v != b.version
	msg := sprintf("%s is at %s; the baseline has %s", [key, v, b.version])
}
