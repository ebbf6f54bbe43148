# METADATA
# title: No GPU's clocks are held down by a hardware, thermal or power-brake slowdown
# description: >-
#   NVML's clock event reasons say why a GPU runs below the clocks it was asked for. Idle, the
#   software power cap under load, sync boost and the clock settings are the normal course. A
#   hardware slowdown (the board's own power or thermal protection, or an external signal), a
#   hardware thermal or power-brake slowdown, or a software thermal slowdown is a GPU running slower
#   than it should without failing anything: the job completes, late. The reasons that pass are
#   params.gpu_clock_events_allowed.
# scope: package
# custom:
#   id: GH-GPU-023
#   severity: medium
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Read the active reasons with nvidia-smi -q -d PERFORMANCE. For a thermal slowdown check the
#     chassis fans, airflow and inlet temperature; for a hardware or power-brake slowdown the power
#     supplies and their cabling. Drain the node while it lasts.
#   controls:
#     nist-800-53: [PE-14, SI-4]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.clock_events

default allowed := ["gpu_idle", "applications_clocks_setting", "sw_power_cap", "sync_boost", "display_clock_setting"]

allowed := data.gpuhost.params.gpu_clock_events_allowed

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains {"msg": msg, "subject": d.uuid} if {
	# regal ignore:pointless-reassignment
	ok := allowed
	some d in input.gpu.devices
	held := [r | some r in object.get(d, "throttle_reasons", []); not r in ok]
	count(held) > 0
	msg := sprintf("GPU %d (%s) runs with its clocks held down: %s", [d.index, d.uuid, concat(", ", held)])
}
