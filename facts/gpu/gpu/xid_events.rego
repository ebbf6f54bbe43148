# METADATA
# title: No GPU logged a critical Xid in the last seven days
# description: >-
#   The NVIDIA driver writes an Xid line to the kernel log for each GPU fault. The codes in
#   params.gpu_critical_xids (double-bit ECC, row remap and page retirement events, NVLink errors,
#   a GPU fallen off the bus, contained and uncontained ECC, GSP timeouts) mean hardware trouble;
#   application faults such as Xid 13 and 31 are left out. The kernel log is read without NVML, so
#   the check judges a host whose NVML is down too; an event from such a host names the GPU by its
#   PCI address. Skips when no kernel log could be read.
# scope: package
# custom:
#   id: GH-GPU-014
#   severity: high
#   location: /var/log/kern.log
#   remediation: >-
#     Look the code up in NVIDIA's Xid catalogue, drain the node, reset the GPU and run DCGM
#     diagnostics (dcgmi diag -r 3); open an RMA if the Xid recurs.
#   controls:
#     nist-800-53: [SI-4, IR-4]
#   targets: [host, facts]
#   requires: []
#   judges: [gpu]
package gpuhost.gpu.xid_events

default critical := {}

critical := data.gpuhost.params.gpu_critical_xids

skip contains sprintf("the kernel log could not be read: %s", [input.gpu.xid_error]) if input.gpu.xid_error != ""

# The collector names the log it read (xid_source) or why it read none
# (xid_error); with neither, it did not run.
skip contains "the kernel log was not read: the gpu collector did not run" if {
	not input.gpu.xid_source
	not input.gpu.xid_error
}

# The collector names the GPUs NVML lists at each event's PCI address; an
# event from a GPU NVML no longer lists (one that fell off the bus) or from
# a host where NVML failed keeps only its address.
gpu_at(ev) := concat(" and ", [sprintf("GPU %d (%s)", [g.index, g.uuid]) | some g in ev.gpus]) if {
	count(object.get(ev, "gpus", [])) > 0
} else := sprintf("the GPU at PCI %s", [ev.pci_bus_id])

deny contains msg if {
	some ev in input.gpu.xid_events
	meaning := critical[sprintf("%d", [ev.code])]
	msg := sprintf("%s logged Xid %d (%s) at %s: %s", [gpu_at(ev), ev.code, meaning, object.get(ev, "time", "an unknown time"), object.get(ev, "message", "")])
}
