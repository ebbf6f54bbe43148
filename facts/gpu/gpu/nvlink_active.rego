# METADATA
# title: Every NVLink a GPU model should have is active
# description: >-
#   An SXM GPU is wired to its peers by a fixed number of NVLinks (12 on an A100 SXM4, 18 on
#   Hopper and Blackwell SXM parts). A link that is down halves collective bandwidth or splits an
#   NVLink domain, and jobs run slowly rather than fail. params.gpu_nvlink_links maps each GPU
#   product, by the whole name NVML gives it (case aside; a name may carry a prefix before a
#   space, as go-nvml's mock "Mock NVIDIA A100-SXM4-40GB" does), to what its links should be:
#   "fixed" (an SXM board: links 0 to links-1 all active), "bridge" (a PCIe card
#   or a GH200 whose NVLinks exist only where a bridge or an NVLink switch is fitted: no active link
#   is fine, but once any is active, all of the bridge's links must be) or "none" (L40S, T4). A
#   bare number is "fixed". Names are matched whole, never by substring, so an H200 NVL or a
#   GH200 is never held to the H200 SXM's count. Each message names the GPU's index and UUID and the links that are
#   down. Skips when no GPU's name is a key.
# scope: package
# custom:
#   id: GH-GPU-021
#   severity: high
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Read "nvidia-smi nvlink --status" and the kernel log for Xid 74; reseat the GPU, its bridges
#     or its baseboard, check the NVSwitch fabric (nvidia-fabricmanager), and run "dcgmi diag -r 2".
#   controls:
#     nist-800-53: [SI-4, CM-8]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.nvlink_active

default table := {}

table := data.gpuhost.params.gpu_nvlink_links

norm(name) := lower(trim_space(name))

# expected is the table keyed by normalised name, each entry as an object.
expected[norm(k)] := spec(v) if some k, v in table

spec(v) := {"links": v, "mode": "fixed"} if is_number(v)

spec(v) := {"links": object.get(v, "links", 0), "mode": object.get(v, "mode", "fixed")} if is_object(v)

# A key matches the whole name, or its end after a space; where two do, the
# longer says more.
want(d) := expected[k] if {
	is_string(d.name)
	name := norm(d.name)
	keys := {k | some k, _ in expected; names_product(name, k)}
	longest := max({count(k) | some k in keys})
	some k in keys
	count(k) == longest
}

names_product(name, key) if name == key

names_product(name, key) if endswith(name, concat("", [" ", key]))

matched if {
	some d in input.gpu.devices
	want(d)
}

skip contains "no GPU's name is a key of params.gpu_nvlink_links" if not matched

active(d) := {l.link | some l in object.get(d, "nvlink", []); l.active == true}

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	w := want(d)
	w.mode == "fixed"
	w.links > 0
	missing := {l | some l in numbers.range(0, w.links - 1)} - active(d)
	count(missing) > 0
	msg := sprintf("GPU %d (%s): NVLink %s not active; %d active links are wanted on %s", [d.index, d.uuid, down_text(missing), w.links, d.name])
}

# A bridge that is not fitted leaves every link inactive, which is fine;
# one that is fitted but short of links is a degraded bridge.
deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	w := want(d)
	w.mode == "bridge"
	up := count(active(d))
	up > 0
	up < w.links
	listed := {l.link | some l in object.get(d, "nvlink", [])}
	msg := sprintf(
		"GPU %d (%s): %d of the %d NVLinks a bridged %s has are active (NVLink %s not active); reseat or replace its bridges",
		[d.index, d.uuid, up, w.links, d.name, down_text(listed - active(d))],
	)
}

down_text(links) := concat(", ", [sprintf("%d", [l]) | some l in sort(links)]) if count(links) > 0

down_text(links) := "none listed" if count(links) == 0
