# METADATA
# title: containerd has the NVIDIA runtime configured
# description: >-
#   containerd's effective configuration (config.toml with its conf.d drop-ins merged) must define
#   a runtime named nvidia, as "nvidia-ctk runtime configure --runtime=containerd" writes it.
#   Skips when containerd is not configured.
# scope: package
# custom:
#   id: GH-RT-001
#   severity: high
#   remediation: >-
#     Run "nvidia-ctk runtime configure --runtime=containerd --set-as-default" and restart
#     containerd.
#   controls:
#     nist-800-53: [CM-2, CM-6]
#   targets: [rootfs, image, host, facts]
#   requires: [container_runtime]
package gpuhost.runtime.containerd_nvidia_runtime

containerd := object.get(input.container_runtime, "containerd", null)

skip contains "containerd is not configured" if containerd == null

deny contains msg if {
	containerd != null
	not containerd.nvidia_runtime
	msg := sprintf("containerd (%s) defines no nvidia runtime", [containerd.config_path])
}
