# METADATA
# title: The NVIDIA kernel module and user-space library are the same version
# description: >-
#   The loaded kernel module (/proc/driver/nvidia/version) must match the driver version NVML
#   reports. After a driver upgrade without a reboot, or a partial install, NVML refuses to start
#   (ERROR_LIB_RM_VERSION_MISMATCH) and every CUDA program on the host fails.
# scope: package
# custom:
#   id: GH-GPU-002
#   severity: critical
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Reboot so the kernel module of the installed driver loads (or unload and reload the nvidia
#     modules with no GPU processes running); if the packages themselves disagree, reinstall one
#     consistent driver version.
#   controls:
#     nist-800-53: [CM-2, SI-2]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.driver_mismatch

module := object.get(input.gpu, "kernel_module_version", "")

library := object.get(input.gpu, "driver_version", "")

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if {
	input.gpu.available == false
	not input.gpu.driver_mismatch
}

deny contains msg if {
	input.gpu.driver_mismatch
	msg := sprintf("NVML refuses to start, the driver library and the loaded kernel module %s differ: %s", [module, object.get(input.gpu, "reason", "")])
}

deny contains msg if {
	module != ""
	library != ""
	module != library
	msg := sprintf("kernel module %s is loaded but the NVML library is %s", [module, library])
}
