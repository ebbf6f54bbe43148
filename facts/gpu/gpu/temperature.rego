# METADATA
# title: Every GPU runs below its slowdown temperature with margin
# description: >-
#   A GPU within params.gpu_temperature_margin_c (10 by default) degrees of its slowdown threshold
#   is about to throttle its clocks; it points to failed fans, blocked airflow or a hot aisle.
# scope: package
# custom:
#   id: GH-GPU-012
#   severity: medium
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Check the chassis fans and airflow, the data-centre inlet temperature and the GPU's clock
#     event reasons (nvidia-smi -q -d PERFORMANCE); drain the node if it keeps running hot.
#   controls:
#     nist-800-53: [PE-14, SI-4]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.temperature

default margin := 10

margin := data.gpuhost.params.gpu_temperature_margin_c

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains {"msg": msg, "subject": d.uuid} if {
	# Bound once here: a rule reference inside the loop is a lookup per GPU.
	# regal ignore:pointless-reassignment
	m := margin
	some d in input.gpu.devices
	d.temperature_c >= d.temperature_slowdown_c - m
	msg := sprintf("GPU %d (%s) is at %dC; it slows down at %dC and must stay %dC below", [d.index, d.uuid, d.temperature_c, d.temperature_slowdown_c, m])
}
