# METADATA
# title: The loaded NVIDIA driver is the pinned one
# description: >-
#   The driver version NVML reports must be the upstream part of the driver version the baked
#   manifest pins (535.261.03 for a pin of 535.261.03-1). Skips when the baseline pins no
#   driver or NVML is unavailable.
# scope: package
# custom:
#   id: GH-DRIFT-006
#   severity: high
#   location: /etc/gpuhost/manifest.json
#   remediation: >-
#     Reinstall and hold the pinned driver, rebuild its kernel modules (DKMS) and reboot; if the
#     new driver is intended, rebuild the image with the new pin.
#   controls:
#     nist-800-53: [CM-2, CM-3, SI-2]
#   targets: [host, facts]
#   requires: [manifest, gpu]
package gpuhost.drift.driver

pin := object.get(input, ["manifest", "pins", "driver"], "")

# upstream drops the dpkg epoch and revision: 1:535.261.03-1 -> 535.261.03.
upstream := split(regex.replace(pin, `^[0-9]+:`, ""), "-")[0]

skip contains "the baseline pins no driver" if {
	input.manifest
	pin == ""
}

# gpu is bound in each rule rather than once for the package: a rule's value
# is opaque to the memo's read analysis, which would then count the whole of
# input.gpu (every GPU's UUID and temperature) as read.
skip contains sprintf("NVML is unavailable: %s", [object.get(gpu, "reason", "no GPU facts")]) if {
	pin != ""
	gpu := object.get(input, "gpu", {})
	not gpu.available
}

deny contains msg if {
	pin != ""
	gpu := object.get(input, "gpu", {})
	gpu.available
	gpu.driver_version != upstream
	msg := sprintf("NVML reports driver %s; the baseline pins %s", [gpu.driver_version, pin])
}
