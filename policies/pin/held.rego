# METADATA
# title: Pinned packages are held
# description: >-
#   When params.require_hold is true, every installed package named in params.pins must be held
#   (apt-mark hold), so that an apt upgrade cannot move it off its pin. Skips when nothing is
#   pinned or holds are not required. A pinned package that is missing is GH-PIN-001's finding.
# scope: package
# custom:
#   id: GH-PIN-002
#   severity: high
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Run "apt-mark hold" on each listed package (the image provisioner holds every pin it installs).
#   controls:
#     nist-800-53: [CM-2, CM-3, CM-5]
#   targets: [rootfs, image, host, facts]
#   requires: [packages]
package gpuhost.pin.held

import data.gpuhost.pin.lib

pins := object.get(data.gpuhost.params, "pins", {})

# Holds are required unless the params say otherwise.
require_hold := object.get(data.gpuhost.params, "require_hold", true)

skip contains "params.pins is empty: nothing is pinned" if count(pins) == 0

skip contains "params.require_hold is false" if require_hold == false

deny contains msg if {
	require_hold != false
	some p in object.get(input, "packages", [])
	pins[p.name]
	not p.held
	msg := lib.at(p, sprintf("%s:%s %s is pinned but not held", [p.name, p.arch, p.version]))
}
