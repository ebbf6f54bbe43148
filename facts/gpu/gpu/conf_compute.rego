# METADATA
# title: Confidential computing is on, with developer tools off
# description: >-
#   When params.gpu_require_cc is true, the system must run with the GPUs' confidential computing
#   feature on and its devtools mode off (devtools mode lets debuggers and profilers see protected
#   memory). Skips when confidential computing is not required.
# scope: package
# custom:
#   id: GH-GPU-013
#   severity: high
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Boot a CC-capable platform (AMD SEV-SNP or Intel TDX) with a CC-capable driver and set the
#     mode with NVIDIA's gpu-admin-tools ("--set-cc-mode=on"), then reset the GPUs; never ship
#     devtools mode to production.
#   controls:
#     nist-800-53: [SC-28, SC-39]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.conf_compute

required := object.get(data.gpuhost.params, "gpu_require_cc", false)

skip contains "params.gpu_require_cc is false: confidential computing is not required" if required != true

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

cc := object.get(input.gpu, "conf_compute", null)

deny contains "NVML reports no confidential computing state: the driver or the GPUs do not support it" if {
	required == true
	input.gpu.available == true
	cc == null
}

deny contains msg if {
	required == true
	cc.feature != "on"
	msg := sprintf("confidential computing is %s; want on", [cc.feature])
}

deny contains msg if {
	required == true
	cc.devtools_mode != "off"
	msg := sprintf("confidential computing devtools mode is %s; want off", [cc.devtools_mode])
}
