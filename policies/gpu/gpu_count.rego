# METADATA
# title: The host has the expected number of GPUs
# description: >-
#   NVML must see exactly params.gpu_expected_count GPUs. A missing GPU has usually fallen off the
#   bus or failed to initialise, and the scheduler would advertise capacity the node does not have.
#   Skips when params.gpu_expected_count is not set.
# scope: package
# custom:
#   id: GH-GPU-011
#   severity: high
#   remediation: >-
#     Compare "nvidia-smi -L" with "lspci -d 10de:" and the kernel log (Xid 79); reseat or replace the
#     missing GPU, or correct params.gpu_expected_count for this node class.
#   controls:
#     nist-800-53: [CM-8, SI-4]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.gpu_count

want := object.get(data.gpuhost.params, "gpu_expected_count", null)

skip contains "params.gpu_expected_count is not set" if want == null

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains msg if {
	want != null
	have := count(object.get(input.gpu, "devices", []))
	have != want
	msg := sprintf("NVML sees %d GPUs; want %d", [have, want])
}
