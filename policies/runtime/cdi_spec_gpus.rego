# METADATA
# title: The CDI spec names every GPU NVML sees
# description: >-
#   When containerd's CRI plugin has CDI enabled, GPUs reach containers only through the
#   nvidia.com/gpu CDI spec (the gpuhost-gpu provisioner installs a unit that regenerates it at
#   every boot with "nvidia-ctk cdi generate"). A missing spec makes every GPU request fail; a
#   stale one, written before a GPU was added or replaced, hides GPUs from the scheduler. Every
#   GPU NVML lists must be named in a spec, by index or UUID. Skips when CDI is not enabled.
# scope: package
# custom:
#   id: GH-RT-005
#   severity: high
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

named contains name if {
	some s in specs
	some name in s.devices
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
	some d in input.gpu.devices
	not sprintf("%d", [d.index]) in named
	not d.uuid in named
	msg := sprintf("GPU %d (%s) is in no CDI spec (%s)", [d.index, d.uuid, concat(", ", sort([s.file | some s in specs]))])
}
