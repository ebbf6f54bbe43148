# METADATA
# title: Persistence mode is on for every GPU
# description: >-
#   With persistence mode off the driver tears the GPU down whenever no process holds it, so each
#   job pays the initialisation again and health state (ECC counters, clocks) is lost between jobs.
# scope: package
# custom:
#   id: GH-GPU-008
#   severity: medium
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Enable and start nvidia-persistenced.service (preferred over "nvidia-smi -pm 1", which does
#     not survive a reboot).
#   controls:
#     nist-800-53: [CM-6]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.persistence_mode

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	d.persistence_mode == false
	msg := sprintf("GPU %d (%s) runs with persistence mode off", [d.index, d.uuid])
}
