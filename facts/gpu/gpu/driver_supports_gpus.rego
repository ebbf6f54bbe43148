# METADATA
# title: The driver branch supports every GPU in the host
# description: >-
#   Each GPU model needs a minimum driver branch (H100 525, H200 and GH200 535, B200 570) and some
#   kernel module flavour (Blackwell runs only on the open modules; Maxwell, Pascal and Volta only on
#   the proprietary ones). The branch checked is the pinned one (params.gpu_driver_version) when set,
#   else the running one. The matrix is in facts/gpu/compat.go and reaches policy as each device's
#   min_driver_branch, open_module_supported and open_module_required.
# scope: package
# custom:
#   id: GH-GPU-018
#   severity: high
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Pin a driver branch at or above the newest GPU's minimum, and install the kernel module flavour
#     the GPUs need (nvidia-open / *-open packages for Blackwell).
#   controls:
#     nist-800-53: [CM-2, SA-22]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.driver_supports_gpus

default pin := null

pin := data.gpuhost.params.gpu_driver_version

branch := to_number(digits[0]) if {
	is_string(pin)
	digits := regex.find_n(`^[0-9]+`, pin, 1)
	digits != []
} else := object.get(input.gpu, "driver_branch", 0)

default source := "running"

source := "pinned" if is_string(pin)

default flavor := ""

flavor := input.gpu.kernel_module_type

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains {"msg": msg, "subject": d.uuid} if {
	# Bound once here: a rule reference inside the loop is a lookup per GPU.
	# regal ignore:pointless-reassignment
	b := branch
	some d in input.gpu.devices
	d.min_driver_branch > b
	msg := sprintf(
		"GPU %d (%s) (%s, %s) needs driver branch %d or newer; the %s branch is %d",
		[d.index, d.uuid, d.name, d.architecture, d.min_driver_branch, source, b],
	)
}

deny contains {"msg": msg, "subject": d.uuid} if {
	flavor == "proprietary"
	some d in input.gpu.devices
	d.open_module_required
	msg := sprintf("GPU %d (%s) (%s, %s) runs only on the open kernel modules; the proprietary module is loaded", [d.index, d.uuid, d.name, d.architecture])
}

deny contains {"msg": msg, "subject": d.uuid} if {
	flavor == "open"
	some d in input.gpu.devices
	d.open_module_supported == false
	msg := sprintf("GPU %d (%s) (%s, %s) is not supported by the open kernel modules, which are loaded", [d.index, d.uuid, d.name, d.architecture])
}
