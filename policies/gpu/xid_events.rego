# METADATA
# title: No GPU logged a critical Xid in the last seven days
# description: >-
#   The NVIDIA driver writes an Xid line to the kernel log for each GPU fault. The codes in
#   params.gpu_critical_xids (double-bit ECC, row remap and page retirement events, NVLink errors,
#   a GPU fallen off the bus, contained and uncontained ECC, GSP timeouts) mean hardware trouble;
#   application faults such as Xid 13 and 31 are left out. Skips when no kernel log could be read.
# scope: package
# custom:
#   id: GH-GPU-014
#   severity: high
#   remediation: >-
#     Look the code up in NVIDIA's Xid catalogue, drain the node, reset the GPU and run DCGM
#     diagnostics (dcgmi diag -r 3); open an RMA if the Xid recurs.
#   controls:
#     nist-800-53: [SI-4, IR-4]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.xid_events

default critical := {}

critical := data.gpuhost.params.gpu_critical_xids

skip contains sprintf("the kernel log could not be read: %s", [input.gpu.xid_error]) if input.gpu.xid_error != ""

# The kernel log names a GPU by PCI domain:bus:device (0000:07:00), NVML by
# domain:bus:device.function with an 8-digit domain (00000000:07:00.0): match
# on bus and device.
busdev(id) := concat(":", array.slice(parts, count(parts) - 2, count(parts))) if {
	parts := split(lower(split(id, ".")[0]), ":")
	count(parts) >= 2
}

# Work out the event's bus:device once and test each GPU's id against it with
# one regex (case-insensitive: NVML writes hex digits in upper case), rather
# than normalising every GPU's id for every event: a failing GPU can log
# hundreds of Xids, and builtin calls are what policy evaluation pays for.
gpu_at(bus) := concat(" and ", names) if {
	at := busdev(bus)
	regex.match(`^[0-9a-f]+:[0-9a-f]+$`, at)
	pattern := sprintf(`(?i)^([^.]*:)?%s([.]|$)`, [at])
	names := [sprintf("GPU %d (%s)", [d.index, d.uuid]) |
		some d in input.gpu.devices
		regex.match(pattern, d.pci_bus_id)
	]
	names != []
} else := sprintf("the GPU at PCI %s", [bus])

deny contains msg if {
	some ev in input.gpu.xid_events
	meaning := critical[sprintf("%d", [ev.code])]
	msg := sprintf("%s logged Xid %d (%s) at %s: %s", [gpu_at(ev.pci_bus_id), ev.code, meaning, object.get(ev, "time", "an unknown time"), object.get(ev, "message", "")])
}
