# METADATA
# title: The CDI spec names every GPU NVML sees
# description: >-
#   When containerd's CRI plugin has CDI enabled, GPUs reach containers only through the
#   nvidia.com/gpu CDI spec (the gpuhost-gpu provisioner installs a unit that regenerates it at
#   every boot with "nvidia-ctk cdi generate"). A missing spec makes every GPU request fail; a
#   stale one, written before a GPU was added, hides GPUs from the scheduler. The specs must name
#   at least as many GPUs as NVML sees ("all" and MIG devices aside). Skips when CDI is not
#   enabled.
# scope: package
# custom:
#   id: GH-RT-005
#   severity: high
#   location: /etc/cdi/nvidia.yaml
#   remediation: >-
#     Run "systemctl restart gpuhost-cdi.service" (or "nvidia-ctk cdi generate
#     --output=/var/run/cdi/nvidia.yaml") and check "nvidia-ctk cdi list" against "nvidia-smi -L".
#   controls:
#     nist-800-53: [CM-6, CM-8]
#   targets: [host, facts]
#   requires: [container_runtime, gpu]
package gpuhost.runtime.cdi_spec_gpus

cdi_enabled if input.container_runtime.containerd.cdi_enabled == true

specs := [s | some s in object.get(input.container_runtime, "cdi_specs", []); s.kind == "nvidia.com/gpu"]

# Whole GPUs the specs name: by index or UUID, not "all", not a MIG
# device ("0:1").
named contains name if {
	some s in specs
	some name in s.devices
	name != "all"
	not contains(name, ":")
}

skip contains "containerd does not enable CDI" if not cdi_enabled

skip contains sprintf("NVML is unavailable: %s", [object.get(input.gpu, "reason", "")]) if input.gpu.available == false

deny contains "CDI is enabled but no nvidia.com/gpu CDI spec is in /etc/cdi or /var/run/cdi" if {
	cdi_enabled
	input.gpu.available == true
	count(specs) == 0
}

deny contains msg if {
	cdi_enabled
	count(specs) > 0
	count(named) < count(input.gpu.devices)
	msg := sprintf("the CDI specs (%s) name %d GPUs; NVML sees %d", [concat(", ", sort([s.file | some s in specs])), count(named), count(input.gpu.devices)])
}
