# METADATA
# title: No GPU has a pending page retirement or too many retired pages
# description: >-
#   Pre-Ampere GPUs retire memory pages that show ECC errors. A retirement pending a reset leaves
#   a bad page in use; at params.gpu_retired_pages_max (63 by default, DCGM's threshold) or more
#   retired pages the GPU is due for replacement. Ampere and later remap rows instead (GH-GPU-007).
# scope: package
# custom:
#   id: GH-GPU-005
#   severity: high
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Drain the node and reset the GPU (nvidia-smi -r) or reboot so pending retirements take effect;
#     open an RMA for a GPU at or over the limit.
#   controls:
#     nist-800-53: [SI-16, SI-4]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.retired_pages

limit := object.get(data.gpuhost.params, "gpu_retired_pages_max", 63)

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	d.retired_pages.pending
	msg := sprintf("GPU %d (%s) has a page retirement pending a GPU reset", [d.index, d.uuid])
}

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	d.retired_pages.count >= limit
	msg := sprintf("GPU %d (%s) has %d retired pages; the limit is %d", [d.index, d.uuid, d.retired_pages.count, limit])
}
