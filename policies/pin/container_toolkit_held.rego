# METADATA
# title: The NVIDIA container toolkit's four packages are installed and held together
# description: >-
#   nvidia-container-toolkit, nvidia-container-toolkit-base, libnvidia-container-tools and
#   libnvidia-container1 move in lockstep. If any of them is installed, all four must be installed
#   and all must be held; holding only some lets apt split the set on upgrade. Skips when none
#   is installed.
# scope: package
# custom:
#   id: GH-PIN-003
#   severity: high
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Install all four at the same version and run "apt-mark hold nvidia-container-toolkit
#     nvidia-container-toolkit-base libnvidia-container-tools libnvidia-container1".
#   controls:
#     nist-800-53: [CM-2, CM-3, SI-2]
#   targets: [rootfs, image, host, facts]
#   requires: [packages]
package gpuhost.pin.container_toolkit_held

import data.gpuhost.pin.lib

# The toolkit's own packaging splits it into these four; this is not a site choice.
toolkit := {
	"nvidia-container-toolkit",
	"nvidia-container-toolkit-base",
	"libnvidia-container-tools",
	"libnvidia-container1",
}

present := [p | some p in object.get(input, "packages", []); p.name in toolkit]

present_names contains p.name if some p in present

skip contains "the NVIDIA container toolkit is not installed" if count(present) == 0

deny contains msg if {
	count(present) > 0
	some name in (toolkit - present_names)
	msg := sprintf("%s is not installed while %s are; the four toolkit packages must be installed together", [name, concat(", ", sort(present_names))])
}

deny contains msg if {
	some p in present
	not p.held
	msg := lib.at(p, sprintf("%s:%s %s is installed but not held", [p.name, p.arch, p.version]))
}
