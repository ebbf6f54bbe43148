# METADATA
# title: Unattended upgrades are off while a stack is pinned
# description: >-
#   When params.pins is not empty, unattended-upgrades must not run - either the package is not
#   installed or unattended-upgrades.service is masked - so the pinned stack and the kernel it was
#   built against change only through a new image. Skips when nothing is pinned.
# scope: package
# custom:
#   id: GH-PIN-004
#   severity: medium
#   location: /etc/apt/apt.conf.d/20auto-upgrades
#   remediation: >-
#     Run "systemctl mask unattended-upgrades.service" (or remove the unattended-upgrades package)
#     and roll out updates by rebuilding the image.
#   controls:
#     nist-800-53: [CM-2, CM-3, CM-7]
#   targets: [rootfs, image, host, facts]
#   requires: [packages, systemd]
package gpuhost.pin.unattended_upgrades

import data.gpuhost.pin.lib

pins := object.get(data.gpuhost.params, "pins", {})

unit := "unattended-upgrades.service"

skip contains "params.pins is empty: nothing is pinned" if count(pins) == 0

masked if unit in object.get(object.get(input, "systemd", {}), "masked", [])

# The package's paragraph in dpkg's status file is what the finding points
# at: the service mask is missing, and a missing line has no place.
deny contains finding if {
	count(pins) > 0
	not masked
	some p in object.get(input, "packages", [])
	p.name == "unattended-upgrades"
	msg := sprintf("unattended-upgrades is installed and %s is not masked while %d packages are pinned", [unit, count(pins)])
	finding := lib.at(p, msg)
}
