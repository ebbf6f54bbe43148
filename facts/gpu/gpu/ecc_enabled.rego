# METADATA
# title: ECC is enabled on every GPU, with no change pending
# description: >-
#   Every GPU that supports ECC must run with it on, and have no different mode pending for the
#   next reset. Without ECC, memory errors silently corrupt results; DCGM skips its memory test.
# scope: package
# custom:
#   id: GH-GPU-003
#   severity: high
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Enable ECC with "nvidia-smi -e 1" (or "-i <index> -e 1") and reset the GPU or reboot; make it
#     part of the image's first-boot configuration.
#   controls:
#     nist-800-53: [SI-16, CM-6]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.ecc_enabled

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	d.ecc.current == false
	msg := sprintf("GPU %d (%s) runs with ECC off", [d.index, d.uuid])
}

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	d.ecc.pending != d.ecc.current
	msg := sprintf("GPU %d (%s) has an ECC mode change pending (current %v, pending %v)", [d.index, d.uuid, d.ecc.current, d.ecc.pending])
}
