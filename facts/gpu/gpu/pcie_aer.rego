# METADATA
# title: No GPU's PCIe link reports uncorrectable errors
# description: >-
#   PCIe Advanced Error Reporting counts the errors a GPU's link has seen since boot. A non-fatal
#   or fatal uncorrectable error is a transfer the link could not repair: the next one can take
#   the GPU off the bus (Xid 79). Correctable errors are retried by the link itself; a count that
#   grows is a link going bad, judged when params.gpu_aer_correctable_max is set. The kernel counts
#   an error where it is reported, which may be the GPU's upstream port rather than the GPU, and a
#   GPU whose function has no AER counters is not judged.
# scope: package
# custom:
#   id: GH-GPU-026
#   severity: high
#   location: /sys/bus/pci/devices
#   remediation: >-
#     Drain the node, reseat the GPU or its riser and cables, and check the slot with the vendor's
#     diagnostics; the kernel log (AER lines) names the error types. Replace the part that keeps
#     reporting them.
#   controls:
#     nist-800-53: [SI-4, SC-5]
#   targets: [host, facts]
#   requires: [pci]
package gpuhost.gpu.pcie_aer

default correctable_max := null

correctable_max := data.gpuhost.params.gpu_aer_correctable_max

gpus := [d | some d in input.pci.devices; d.gpu == true]

error contains {"msg": msg, "subject": d.address} if {
	some d in gpus
	object.get(d, "aer_error", "") != ""
	msg := sprintf("the AER counters of the GPU at %s could not be read: %s", [d.address, d.aer_error])
}

deny contains {"msg": msg, "subject": d.address} if {
	some d in gpus
	d.aer.fatal + d.aer.nonfatal > 0
	msg := sprintf("the GPU at %s has reported %d fatal and %d non-fatal uncorrectable PCIe errors (AER) since boot", [d.address, d.aer.fatal, d.aer.nonfatal])
}

deny contains {"msg": msg, "subject": d.address} if {
	# regal ignore:pointless-reassignment
	bound := correctable_max
	bound != null
	some d in gpus
	d.aer.correctable > bound
	msg := sprintf(
		"the GPU at %s has reported %d correctable PCIe errors (AER) since boot, above params.gpu_aer_correctable_max (%d)",
		[d.address, d.aer.correctable, bound],
	)
}
