# METADATA
# title: Every GPU's InfoROM passes validation
# description: >-
#   The InfoROM is the board's own record of its ECC errors, retired pages and remapped rows, the
#   memory health the other GPU checks read. When NVML's checksum validation of it fails, those
#   records cannot be trusted and the GPU's history is lost; the board needs service before it is
#   trusted with work.
# scope: package
# custom:
#   id: GH-GPU-024
#   severity: high
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Drain the node and run NVIDIA's field diagnostic on the GPU (nvidia-smi -q shows the InfoROM
#     versions); a corrupt InfoROM is reflashed by the vendor or the board replaced.
#   controls:
#     nist-800-53: [SI-7, SI-4]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.inforom

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	d.inforom_valid == false
	msg := sprintf("GPU %d (%s) fails InfoROM validation: its ECC, retired-page and remapped-row records cannot be trusted", [d.index, d.uuid])
}
