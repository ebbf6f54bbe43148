# METADATA
# title: No GPU has uncorrected ECC errors since the driver loaded
# description: >-
#   The volatile uncorrected ECC counter counts double-bit errors since the last driver load. Any
#   uncorrected error means data was lost in GPU memory and the GPU needs attention before it runs
#   more jobs.
# scope: package
# custom:
#   id: GH-GPU-004
#   severity: critical
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Drain the node, check "nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER", reset the GPU
#     so pending retirements or row remaps take effect, and run DCGM diagnostics (dcgmi diag -r 3);
#     open an RMA if errors recur.
#   controls:
#     nist-800-53: [SI-16, SI-4]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.ecc_uncorrected

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	d.ecc.uncorrected_volatile > 0
	msg := sprintf(
		"GPU %d (%s) has %d uncorrected ECC errors since the driver loaded (%d in its lifetime)",
		[d.index, d.uuid, d.ecc.uncorrected_volatile, d.ecc.uncorrected_aggregate],
	)
}
