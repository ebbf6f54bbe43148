# METADATA
# title: Baked holds are still in place
# description: >-
#   Every package the baked manifest records as held (apt-mark hold), and every package it
#   pins, must still be installed and held. A released hold lets the next apt upgrade move the
#   package off its pin.
# scope: package
# custom:
#   id: GH-DRIFT-004
#   severity: high
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Put the hold back ("apt-mark hold NAME") and reinstall the baked version if it moved; if the
#     change is intended, rebuild the image with the new pin.
#   controls:
#     nist-800-53: [CM-2, CM-3, CM-5]
#   targets: [rootfs, image, host, facts]
#   requires: [manifest, packages]
package gpuhost.drift.holds_released

packages := object.get(input, "packages", [])

live[p.name] contains p if some p in packages

held contains p.name if {
	some p in packages
	p.held == true
}

baked_held contains b.name if {
	some b in object.get(input, ["manifest", "packages"], [])
	b.held == true
}

# now describes a package that is not held: its live versions, or its absence.
# It takes live whole (cached for the evaluation) rather than live[name],
# which would go over every installed package again for each call.
now(name) := sprintf("installed at %s but not held", [concat(", ", sort({sprintf("%s:%s %s", [p.name, p.arch, p.version]) | some p in versions[name]}))]) if {
	# regal ignore:pointless-reassignment
	versions := live
	count(versions[name]) > 0
} else := "no longer installed"

deny contains msg if {
	some b in object.get(input, ["manifest", "packages"], [])
	b.held == true
	not b.name in held
	msg := sprintf("%s:%s was held at %s in the baseline; now %s", [b.name, b.arch, b.version, now(b.name)])
}

# Pins the inventory does not show as held (a pin without a version, or a
# manifest written before the hold) are held to the same rule.
deny contains msg if {
	some pin in object.get(input, ["manifest", "pins", "packages"], [])
	not pin.name in baked_held
	not pin.name in held
	msg := sprintf("%s is pinned at %s in the baseline; now %s", [pin.name, object.get(pin, "version", "any version"), now(pin.name)])
}
