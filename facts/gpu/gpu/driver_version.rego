# METADATA
# title: The running NVIDIA driver is the pinned version
# description: >-
#   The driver NVML reports must equal params.gpu_driver_version exactly. A host that drifted
#   to another driver (an unattended upgrade, a hand-installed .run file) runs untested code
#   under every workload. Skips when no driver version is pinned.
# scope: package
# custom:
#   id: GH-GPU-001
#   severity: high
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Reinstall the pinned driver packages (or rebuild the host from the baked image), hold them
#     with "apt-mark hold", and reboot so that the kernel module and the library match the pin.
#   controls:
#     nist-800-53: [CM-2, CM-3, SI-2]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.driver_version

default pin := null

pin := data.gpuhost.params.gpu_driver_version

skip contains "params.gpu_driver_version is not set: no driver is pinned" if pin == null

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

default running := ""

running := input.gpu.driver_version

deny contains msg if {
	pin != null
	running == ""
	msg := sprintf("NVML did not report a driver version; pinned to %s", [pin])
}

deny contains msg if {
	pin != null
	running != ""
	running != pin
	msg := sprintf("driver %s is running; pinned to %s", [running, pin])
}
