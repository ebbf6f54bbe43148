# METADATA
# title: No GPU is approaching the retired page limit
# description: >-
#   An early warning before GH-GPU-005 fails: a GPU with params.gpu_retired_pages_warn (15 by
#   default) or more retired pages is wearing out and should be watched or scheduled for replacement.
# scope: package
# custom:
#   id: GH-GPU-006
#   severity: low
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Track the GPU's retired page count over time (nvidia-smi -q -d PAGE_RETIREMENT) and plan its
#     replacement before it reaches the limit.
#   controls:
#     nist-800-53: [SI-4]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.retired_pages_warn

warn := object.get(data.gpuhost.params, "gpu_retired_pages_warn", 15)

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	d.retired_pages.count >= warn
	msg := sprintf("GPU %d (%s) has %d retired pages (warning from %d)", [d.index, d.uuid, d.retired_pages.count, warn])
}
