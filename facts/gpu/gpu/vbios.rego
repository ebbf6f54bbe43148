# METADATA
# title: The GPUs of one product on a node run the same VBIOS
# description: >-
#   A node whose GPUs of one product run different VBIOS versions was updated only in part (a
#   field update that stopped half way, a board swapped in from stock): its GPUs differ in clocks,
#   power management and fixes, and a job spread across them runs at the pace of the oldest. Each
#   GPU whose VBIOS differs from the one most of its product's GPUs on the node run is named.
# scope: package
# custom:
#   id: GH-GPU-025
#   severity: medium
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Bring every GPU of the product to the VBIOS the vendor qualified for the node (nvidia-smi -q
#     shows each GPU's VBIOS version), with the vendor's firmware update tool.
#   controls:
#     nist-800-53: [CM-2, CM-6]
#   targets: [host, facts]
#   requires: [gpu]
package gpuhost.gpu.vbios

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

# versions[name][v] is how many GPUs of the product run VBIOS v.
versions[name][v] := n if {
	some d in input.gpu.devices
	name := d.name
	v := object.get(d, "vbios_version", "")
	v != ""
	n := count([e | some e in input.gpu.devices; e.name == name; object.get(e, "vbios_version", "") == v])
}

# usual[name] is the version most of the product's GPUs run; of versions
# run by as many, the greatest.
usual[name] := v if {
	some name, vs in versions
	most := max([n | some n in vs])
	v := max([w | some w, n in vs; n == most])
}

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	v := object.get(d, "vbios_version", "")
	v != ""
	want := usual[d.name]
	v != want
	msg := sprintf("GPU %d (%s) runs VBIOS %s, unlike the %d other %s GPUs on the node, which run %s", [d.index, d.uuid, v, versions[d.name][want], d.name, want])
}
