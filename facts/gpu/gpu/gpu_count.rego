# METADATA
# title: The host has the expected number of GPUs
# description: >-
#   The host must have exactly params.gpu_expected_count GPUs. NVML's count is used when NVML
#   answers; when it cannot (no driver loaded, NVML failing), the NVIDIA display functions on the
#   PCI bus are counted instead, so a host whose driver is down is still judged. A missing GPU has
#   usually fallen off the bus or failed to initialise, and the scheduler would advertise capacity
#   the node does not have. Skips when params.gpu_expected_count is not set, or when neither NVML
#   nor the PCI bus could be read.
# scope: package
# custom:
#   id: GH-GPU-011
#   severity: high
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Compare "nvidia-smi -L" with "lspci -d 10de:" and the kernel log (Xid 79); reseat or replace the
#     missing GPU, or correct params.gpu_expected_count for this node class.
#   controls:
#     nist-800-53: [CM-8, SI-4]
#   targets: [host, facts]
#   requires: []
#   judges: [gpu, pci]
package gpuhost.gpu.gpu_count

want := object.get(data.gpuhost.params, "gpu_expected_count", null)

nvml_up if {
	input.collectors.gpu.status == "ok"
	input.gpu.available == true
}

pci_read if input.collectors.pci.status == "ok"

skip contains "params.gpu_expected_count is not set" if want == null

skip contains msg if {
	not nvml_up
	not pci_read
	msg := sprintf("neither NVML (%s) nor the PCI bus (%s) could be read", [nvml_reason, pci_reason])
}

default nvml_reason := "did not run"

nvml_reason := input.gpu.reason

nvml_reason := input.collectors.gpu.reason if not input.gpu.reason

default pci_reason := "did not run"

pci_reason := input.collectors.pci.reason

deny contains msg if {
	want != null
	nvml_up
	have := count(object.get(input.gpu, "devices", []))
	have != want
	msg := sprintf("NVML sees %d GPUs; want %d", [have, want])
}

deny contains msg if {
	want != null
	not nvml_up
	pci_read
	have := count([d | some d in input.pci.devices; d.gpu])
	have != want
	msg := sprintf("NVML is unavailable; the PCI bus shows %d NVIDIA GPUs; want %d", [have, want])
}
