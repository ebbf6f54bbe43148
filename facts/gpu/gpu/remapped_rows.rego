# METADATA
# title: No GPU has a pending or failed row remap
# description: >-
#   Ampere and later GPUs remap memory rows that show uncorrectable errors. A pending remap takes
#   effect only after a GPU reset; a failed remap means the GPU ran out of spare rows and must be
#   replaced. DCGM fails on both.
# scope: package
# custom:
#   id: GH-GPU-007
#   severity: high
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Drain the node and reset the GPU (nvidia-smi -r) or reboot to apply a pending remap; open an
#     RMA for a GPU whose remap failed.
#   controls:
#     nist-800-53: [SI-16, SI-4]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.remapped_rows

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	d.remapped_rows.pending
	msg := sprintf("GPU %d (%s) has a row remap pending a GPU reset (%d uncorrectable rows remapped)", [d.index, d.uuid, d.remapped_rows.uncorrectable])
}

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	d.remapped_rows.failed
	msg := sprintf("GPU %d (%s) failed to remap a row: it has no spare rows left", [d.index, d.uuid])
}
