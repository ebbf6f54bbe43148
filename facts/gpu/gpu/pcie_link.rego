# METADATA
# title: Every GPU's PCIe link runs at its full generation and width
# description: >-
#   A link trained below its maximum width (x8 instead of x16) or generation points to a bad riser,
#   slot or cable and cuts host-to-GPU bandwidth. Note that some GPUs lower the link generation when
#   idle to save power; a generation drop seen on an idle GPU should be confirmed under load.
# scope: package
# custom:
#   id: GH-GPU-010
#   severity: high
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Confirm under load with "nvidia-smi -q -d PCIE"; reseat the GPU, riser or cable, check the
#     slot's BIOS settings, and replace the part if the link stays degraded.
#   controls:
#     nist-800-53: [SI-4, CM-6]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.pcie_link

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

# Two rules rather than one calling a function per GPU: a call costs more
# than the comparison it holds. Both write the same message, so a link
# short on both counts is one finding.
deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	p := d.pcie
	p.gen_current < p.gen_max
	msg := sprintf(
		"GPU %d (%s) PCIe link is degraded: Gen%d x%d; the link can do Gen%d x%d",
		[d.index, d.uuid, p.gen_current, p.width_current, p.gen_max, p.width_max],
	)
}

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	p := d.pcie
	p.width_current < p.width_max
	msg := sprintf(
		"GPU %d (%s) PCIe link is degraded: Gen%d x%d; the link can do Gen%d x%d",
		[d.index, d.uuid, p.gen_current, p.width_current, p.gen_max, p.width_max],
	)
}
