# METADATA
# title: The running kernel is the baked one
# description: >-
#   The kernel release the host runs must be the one the baked manifest pins. Skips when the
#   baseline pins no kernel, or the running release is unknown.
# scope: package
# custom:
#   id: GH-DRIFT-005
#   severity: high
#   location: /etc/gpuhost/manifest.json
#   remediation: >-
#     Boot the baked kernel (set it as the GRUB default and reboot) and hold the kernel packages;
#     if the new kernel is intended, rebuild the image so that its NVIDIA modules are built for it.
#   controls:
#     nist-800-53: [CM-2, CM-3]
#   targets: [host, facts]
#   requires: [manifest, kernel]
package gpuhost.drift.kernel

pin := object.get(input, ["manifest", "pins", "kernel"], "")

release := object.get(input, ["kernel", "release"], "")

skip contains "the baseline pins no kernel" if {
	input.manifest
	pin == ""
}

skip contains "the running kernel release is unknown" if {
	pin != ""
	release == ""
}

deny contains msg if {
	pin != ""
	release != ""
	release != pin
	msg := sprintf("the running kernel is %s; the image was baked with %s", [release, pin])
}
