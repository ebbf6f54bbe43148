# METADATA
# title: NGC bases are pinned by digest and come from allowed registries
# description: >-
#   Every pre-seeded container base, and every base the baked manifest pins, must come from a
#   registry in params.allowed_registries (["nvcr.io"] by default), and every pin must carry a
#   sha256 digest; when a manifest is present, every seeded image must be one it pins by digest,
#   so nothing rides along unpinned. A reference without a registry host means Docker Hub.
#   A listed base whose blobs are missing or do not hash to their digests fails as damaged.
#   Whether the pinned bases are all still there is GH-DRIFT-007's job. Skips when no base is
#   seeded or pinned.
# scope: package
# custom:
#   id: GH-SC-002
#   severity: high
#   location: /etc/gpuhost/manifest.json
#   remediation: >-
#     Pin each base in the template's ngc_images by digest (the gpuhost-ngc data source resolves
#     tags), pull only from an allowed registry, and remove images the manifest does not pin;
#     add a registry to allowed_registries in the params file only after review.
#   controls:
#     nist-800-53: [CM-2, SR-3, SR-4, SI-7]
#   targets: [rootfs, image, host, facts]
#   requires: [containers]
package gpuhost.sc.ngc_bases

allowed contains lower(r) if some r in object.get(data.gpuhost.params, "allowed_registries", ["nvcr.io"])

images := object.get(input, ["containers", "images"], [])

pins := object.get(input, ["manifest", "pins", "ngc_images"], [])

pinned_digests contains p.digest if {
	some p in pins
	is_digest(p.digest)
}

is_digest(d) if regex.match(`^sha256:[0-9a-f]{64}$`, d)

# The registry of a reference, as Docker reads it: the first component is a
# host when it has a dot or a port, or is localhost; otherwise Docker Hub.
registry(ref) := lower(first) if {
	parts := split(ref, "/")
	count(parts) > 1
	first := parts[0]
	is_host(first)
} else := "docker.io"

is_host(s) if contains(s, ".")

is_host(s) if contains(s, ":")

is_host("localhost")

damaged := object.get(input, ["containers", "damaged"], [])

skip contains "no NGC base is seeded or pinned" if {
	count(images) == 0
	count(pins) == 0
	count(damaged) == 0
}

# A listed image whose blobs are missing or do not hash to their digests is
# not seeded, whatever its name: the first boot would import nothing, or a
# tampered layer.
deny contains msg if {
	some d in damaged
	msg := sprintf("seeded image %s (%s) is damaged: %s", [d.ref, d.digest, d.reason])
}

deny contains msg if {
	some i in images
	object.get(i, "ref", "") == ""
	msg := sprintf("seeded image %s has no reference, so its registry cannot be checked", [i.digest])
}

deny contains msg if {
	some i in array.concat(images, pins)
	ref := object.get(i, "ref", "")
	ref != ""
	not registry(ref) in allowed
	msg := sprintf("%s comes from %s, which is not an allowed registry (%s)", [ref, registry(ref), concat(", ", sort(allowed))])
}

deny contains msg if {
	some p in pins
	not is_digest(object.get(p, "digest", ""))
	msg := sprintf("the manifest pins %s without a sha256 digest", [object.get(p, "ref", "an unnamed base")])
}

deny contains msg if {
	input.manifest
	some i in images
	not i.digest in pinned_digests
	msg := sprintf("seeded image %s (%s) is not pinned by digest in the manifest", [object.get(i, "ref", ""), i.digest])
}
