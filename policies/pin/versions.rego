# METADATA
# title: Pinned packages are installed at exactly their pinned versions
# description: >-
#   Every package named in params.pins must be installed, and every installed instance
#   (each architecture) must carry exactly the pinned dpkg version, epoch and revision included.
#   An empty params.pins fails under the default GPU profile, since a GPU image pins its NVIDIA
#   stack; it skips only when params.profile is cpu.
# scope: package
# custom:
#   id: GH-PIN-001
#   severity: high
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Install the pinned version ("apt-get install --allow-downgrades NAME=VERSION"), hold it with
#     "apt-mark hold NAME", or rebuild the image from the lock; if the new version is intended,
#     update the pin in the params file.
#   controls:
#     nist-800-53: [CM-2, CM-3, SI-2]
#   targets: [rootfs, image, host, facts]
#   requires: [packages]
package gpuhost.pin.versions

import data.gpuhost.pin.lib

pins := object.get(data.gpuhost.params, "pins", {})

packages := object.get(input, "packages", [])

installed contains p.name if some p in packages

profile := object.get(data.gpuhost.params, "profile", "gpu")

skip contains "params.pins is empty and params.profile is cpu: nothing is pinned" if {
	count(pins) == 0
	profile == "cpu"
}

# A GPU image with nothing pinned would pass by having nothing to check.
deny contains "params.pins is empty: a GPU image must pin its driver, CUDA and container toolkit versions" if {
	count(pins) == 0
	profile == "gpu"
}

deny contains msg if {
	some name, want in pins
	not name in installed
	msg := sprintf("pinned package %s (want %s) is not installed", [name, want])
}

deny contains msg if {
	some p in packages
	want := pins[p.name]
	p.version != want
	msg := lib.at(p, sprintf("%s:%s is installed at %s; pinned to %s", [p.name, p.arch, p.version, want]))
}
