# METADATA
# title: Every NVLink a GPU model should have is active
# description: >-
#   An SXM GPU is wired to its peers by a fixed number of NVLinks (12 on an A100 SXM4, 18 on
#   Hopper and Blackwell SXM parts). A link that is down halves collective bandwidth or splits an
#   NVLink domain, and jobs run slowly rather than fail. params.gpu_nvlink_links maps a part of
#   the GPU's name to the links that must be active; every GPU whose name contains a key must
#   report that many links, all active. Each message names the GPU's index, UUID and the link.
#   Skips when no GPU matches a key (PCIe parts without bridges have no links to check).
# scope: package
# custom:
#   id: GH-GPU-021
#   severity: high
#   remediation: >-
#     Read "nvidia-smi nvlink --status" and the kernel log for Xid 74; reseat the GPU or its
#     baseboard, check the NVSwitch fabric (nvidia-fabricmanager), and run "dcgmi diag -r 2".
#   controls:
#     nist-800-53: [SI-4, CM-8]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.nvlink_active

default expected := {}

expected := data.gpuhost.params.gpu_nvlink_links

# want[i] is how many links GPU i must have active; the longest matching
# key wins, so a site can set one SKU apart from its family.
want[i] := n if {
	some i, d in input.gpu.devices
	keys := [k | some k, _ in expected; contains(d.name, k)]
	count(keys) > 0
	longest := max({count(k) | some k in keys})
	some k in keys
	count(k) == longest
	n := expected[k]
}

skip contains "no GPU's name matches a key of params.gpu_nvlink_links" if count(want) == 0

deny contains msg if {
	some i, n in want
	n > 0
	d := input.gpu.devices[i]
	some link in numbers.range(0, n - 1)
	not link_active(d, link)
	msg := sprintf("GPU %d (%s): NVLink %d is not active; %d active links are wanted on %s", [d.index, d.uuid, link, n, d.name])
}

link_active(d, link) if {
	some l in d.nvlink
	l.link == link
	l.active == true
}
