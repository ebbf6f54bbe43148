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
#   remediation: >-
#     Set the mode with "nvidia-smi -i <index> -mig 1" (or 0) and reset the GPU; recreate the MIG
#     instances the fleet expects.
#   controls:
#     nist-800-53: [CM-2, CM-6]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.mig_mode

label(d) := sprintf("GPU %d (%s)", [d.index, d.uuid])

default want := null

want := data.gpuhost.params.gpu_mig

skip contains "params.gpu_mig is not set: no MIG mode is expected" if want == null

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

# The GPUs not plainly in the wanted mode: one comparison per GPU, so that
# the rules below look closer only at these.
odd contains d if {
	w := want
	w != null
	healthy := {"current": w, "pending": w}
	some d in input.gpu.devices
	d.mig != healthy
}

deny contains msg if {
	some d in odd
	d.mig.current != want
	msg := sprintf("%s has MIG mode %v; want %v", [label(d), d.mig.current, want])
}

deny contains msg if {
	some d in odd
	d.mig.pending != d.mig.current
	msg := sprintf("%s has a MIG mode change pending a reset (current %v, pending %v)", [label(d), d.mig.current, d.mig.pending])
}
