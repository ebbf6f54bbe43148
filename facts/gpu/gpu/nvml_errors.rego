# METADATA
# title: NVML answered every health query
# description: >-
#   A query that failed for any reason other than "not supported" (a timeout, a lost GPU, a
#   corrupted InfoROM) leaves that fact unknown, and the check that reads it cannot pass on
#   evidence. This check fails instead, naming the GPU and the query, so that a sick GPU is never
#   reported healthy by omission.
# scope: package
# custom:
#   id: GH-GPU-019
#   severity: high
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Run "nvidia-smi -q" on the host and read the kernel log for Xid lines; a GPU that hangs or
#     reports itself lost needs a reset (or a reboot) and DCGM diagnostics.
#   controls:
#     nist-800-53: [SI-4, SI-11]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.nvml_errors

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	some e in d.errors
	msg := sprintf("GPU %d (%s): %s", [d.index, d.uuid, e])
}

deny contains input.gpu.reason if {
	input.gpu.available == true
	object.get(input.gpu, "reason", "") != ""
}
