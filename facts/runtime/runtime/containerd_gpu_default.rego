# METADATA
# title: containerd gives containers GPUs without per-pod runtime selection
# description: >-
#   Either the default containerd runtime is an NVIDIA one (nvidia, nvidia-cdi or nvidia-legacy,
#   as "nvidia-ctk runtime configure --set-as-default" writes it) or CDI is enabled in the CRI plugin,
#   so that GPUs are injected by device request. Without either, a pod that does not name the
#   nvidia RuntimeClass gets no GPU, and the GPU operator's device plugin cannot work. Skips when
#   containerd is not configured.
# scope: package
# custom:
#   id: GH-RT-003
#   severity: medium
#   location: /etc/containerd/config.toml
#   remediation: >-
#     Run "nvidia-ctk runtime configure --runtime=containerd --set-as-default" (add --cdi.enabled
#     to use CDI instead) and restart containerd.
#   controls:
#     nist-800-53: [CM-2, CM-6]
#   targets: [rootfs, image, host, facts]
#   requires: [container_runtime]
package gpuhost.runtime.containerd_gpu_default

import data.gpuhost.lib.locate

containerd := object.get(input.container_runtime, "containerd", null)

nvidia_runtimes := {"nvidia", "nvidia-cdi", "nvidia-legacy"}

skip contains "containerd is not configured" if containerd == null

gpu_ready if containerd.default_runtime in nvidia_runtimes

gpu_ready if containerd.cdi_enabled == true

deny contains finding if {
	containerd != null
	not gpu_ready
	msg := sprintf(
		"containerd (%s): default runtime is %q and CDI is not enabled, so containers get no GPU unless they ask for the nvidia runtime",
		[containerd.config_path, object.get(containerd, "default_runtime", "")],
	)
	finding := at(msg, "default_runtime")
}

# at points a finding at the line that sets setting, when the facts know it
# (the main file or the import that set it last).
at(msg, setting) := locate.at(msg, l.file, l.line) if {
	l := containerd.locations[setting]
} else := msg
