# METADATA
# title: Pre-seeded NGC bases are the pinned ones
# description: >-
#   Every container base the baked manifest pins must still be pre-seeded, at its pinned digest.
#   An image found by reference at another digest was re-pulled or replaced. Skips when the
#   baseline pins no images, or no container image facts were collected.
# scope: package
# custom:
#   id: GH-DRIFT-007
#   severity: high
#   location: /etc/gpuhost/manifest.json
#   remediation: >-
#     Pull the pinned base by digest ("ctr -n k8s.io images pull REF@DIGEST") and remove the
#     replacement; if the new base is intended, rebuild the image with the new digest.
#   controls:
#     nist-800-53: [CM-2, CM-3, SI-7]
#   targets: [rootfs, image, host, facts]
#   requires: [manifest]
package gpuhost.drift.ngc_images

pinned := object.get(input, ["manifest", "pins", "ngc_images"], [])

images := object.get(input, ["containers", "images"], [])

digests contains i.digest if some i in images

refs contains i.ref if some i in images

skip contains "the baseline pins no NGC images" if {
	input.manifest
	count(pinned) == 0
}

skip contains "no container image facts were collected" if {
	count(pinned) > 0
	not input.containers
}

deny contains msg if {
	input.containers
	some p in pinned
	not p.digest in digests
	not p.ref in refs
	msg := sprintf("pinned base %s (%s) is not pre-seeded", [p.ref, p.digest])
}

deny contains msg if {
	some p in pinned
	some i in images
	i.ref == p.ref
	i.digest != p.digest
	msg := sprintf("%s is at %s; the baseline pins %s", [p.ref, i.digest, p.digest])
}
