# METADATA
# title: MIG mode is as the fleet expects, with no change pending
# description: >-
#   Every GPU's MIG mode must equal params.gpu_mig (true or false), and no other mode may be pending
#   a reset. A GPU in the wrong mode is invisible to the scheduler's expectations (whole GPUs versus
#   MIG slices). Skips when params.gpu_mig is not set.
# scope: package
# custom:
#   id: GH-GPU-009
#   severity: medium
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Set the mode with "nvidia-smi -i <index> -mig 1" (or 0) and reset the GPU; recreate the MIG
#     instances the fleet expects.
#   controls:
#     nist-800-53: [CM-2, CM-6]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.mig_mode

default want := null

want := data.gpuhost.params.gpu_mig

skip contains "params.gpu_mig is not set: no MIG mode is expected" if want == null

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains {"msg": msg, "subject": d.uuid} if {
	# Bound once here: a rule reference inside the loop is a lookup per GPU.
	# regal ignore:pointless-reassignment
	w := want
	w != null
	some d in input.gpu.devices
	d.mig.current != w
	msg := sprintf("GPU %d (%s) has MIG mode %v; want %v", [d.index, d.uuid, d.mig.current, w])
}

deny contains {"msg": msg, "subject": d.uuid} if {
	want != null
	some d in input.gpu.devices
	d.mig.pending != d.mig.current
	msg := sprintf("GPU %d (%s) has a MIG mode change pending a reset (current %v, pending %v)", [d.index, d.uuid, d.mig.current, d.mig.pending])
}
