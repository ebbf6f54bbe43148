# METADATA
# title: Every NVLink a GPU model should have is active
# description: >-
#   An SXM GPU is wired to its peers by a fixed number of NVLinks (12 on an A100 SXM4, 18 on
#   Hopper and Blackwell SXM parts). A link that is down halves collective bandwidth or splits an
#   NVLink domain, and jobs run slowly rather than fail. params.gpu_nvlink_links maps a part of
#   the GPU's name to the links that must be active; every GPU whose name contains a key must
#   report that many links, all active. Each message names the GPU's index and UUID and the links that
#   are down.
#   Skips when no GPU matches a key (PCIe parts without bridges have no links to check).
# scope: package
# custom:
#   id: GH-GPU-021
#   severity: high
#   location: /proc/driver/nvidia/version
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

# links_for(name) is how many links a GPU of that name must have active;
# the longest matching key wins, so a site can set one SKU apart from its
# family.
links_for(name) := n if {
	keys := [k | some k, _ in expected; contains(name, k)]
	count(keys) > 0
	longest := max({count(k) | some k in keys})
	some k in keys
	count(k) == longest
	n := expected[k]
}

matched if {
	some d in input.gpu.devices
	links_for(d.name)
}

skip contains "no GPU's name matches a key of params.gpu_nvlink_links" if not matched

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	n := links_for(d.name)
	n > 0
	missing := {l | some l in numbers.range(0, n - 1)} - {l.link | some l in d.nvlink; l.active == true}
	count(missing) > 0
	down := [sprintf("%d", [l]) | some l in sort(missing)]
	msg := sprintf("GPU %d (%s): NVLink %s not active; %d active links are wanted on %s", [d.index, d.uuid, concat(", ", down), n, d.name])
}
