# METADATA
# title: NVML answers on a host that should have GPUs
# description: >-
#   A host should have GPUs when params.gpu_expected_count is above zero, when its PCI bus shows
#   NVIDIA display functions (vendor 0x10de, class 0x03xx), when NVIDIA driver packages are
#   installed, or when its baked manifest pins a driver. On such a host a missing or broken NVML
#   (no kernel module, a driver that failed to load, a library that is not installed) leaves every
#   GPU health check without evidence, so it is a failure here rather than a row of skips. The
#   message names NVML's error and the NVIDIA functions the PCI bus shows. Skips only when nothing
#   says the host should have GPUs.
# scope: package
# custom:
#   id: GH-GPU-020
#   severity: critical
#   location: /proc/driver/nvidia/version
#   remediation: >-
#     Read "dmesg | grep -i nvidia" and "nvidia-smi": load the driver (modprobe nvidia), install the
#     user-space library of the same version, or rebuild the host from its image. A node that is
#     meant to run without GPUs sets params.gpu_expected_count to 0 and profile to cpu.
#   controls:
#     nist-800-53: [SI-4, CM-8]
#   targets: [host, facts]
#   requires: []
#   judges: [gpu, pci, gpu_driver, manifest]
package gpuhost.gpu.nvml_expected

default want := null

want := data.gpuhost.params.gpu_expected_count

pci_gpus := [d | some d in object.get(input, ["pci", "devices"], []); d.gpu]

driver_packages := [sprintf("%s %s", [p.name, p.version]) | some p in object.get(input, ["gpu_driver", "packages"], [])]

pinned_driver := object.get(input, ["manifest", "pins", "driver"], "")

because contains sprintf("params.gpu_expected_count is %d", [want]) if {
	is_number(want)
	want > 0
}

because contains sprintf(
	"the PCI bus shows %d NVIDIA GPUs (%s)",
	[count(pci_gpus), concat(", ", [sprintf("%s %s:%s", [d.address, d.vendor, d.device]) | some d in pci_gpus])],
) if {
	count(pci_gpus) > 0
}

because contains sprintf("NVIDIA driver packages are installed (%s)", [concat(", ", driver_packages)]) if {
	count(driver_packages) > 0
}

because contains sprintf("the baked manifest pins driver %s", [pinned_driver]) if pinned_driver != ""

gpu_status := object.get(input, ["collectors", "gpu", "status"], "")

# What is wrong with NVML, or nothing when it answered.
nvml_problem := "the gpu collector did not run" if {
	gpu_status == ""
} else := sprintf("NVML is unavailable (%s)", [object.get(input, ["collectors", "gpu", "reason"], "")]) if {
	gpu_status != "ok"
} else := sprintf("NVML is unavailable (%s)", [object.get(input, ["gpu", "reason"], "")]) if {
	input.gpu.available == false
}

skip contains concat("", [
	"nothing says this host should have GPUs: no params.gpu_expected_count, no NVIDIA PCI function, ",
	"no NVIDIA driver package, no driver pinned in a baked manifest",
]) if {
	count(because) == 0
}

deny contains msg if {
	count(because) > 0
	msg := sprintf("%s on a host that should have GPUs: %s", [nvml_problem, concat("; ", sort(because))])
}
