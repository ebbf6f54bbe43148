# METADATA
# title: containerd has a working NVIDIA runtime
# description: >-
#   containerd's effective configuration (config.toml with its conf.d drop-ins merged) must define
#   a runtime named nvidia, as "nvidia-ctk runtime configure --runtime=containerd" writes it, and
#   that runtime must be able to run: its BinaryName must be an executable file in the target, and
#   the NVIDIA container toolkit packages that ship it (nvidia-container-toolkit and
#   nvidia-container-toolkit-base) must be installed. A runtime entry pointing at nothing starts no
#   GPU container. Skips when containerd is not configured.
# scope: package
# custom:
#   id: GH-RT-001
#   severity: high
#   location: /etc/containerd/config.toml
#   remediation: >-
#     Install the pinned NVIDIA container toolkit packages, run "nvidia-ctk runtime configure
#     --runtime=containerd --set-as-default" and restart containerd.
#   controls:
#     nist-800-53: [CM-2, CM-6]
#   targets: [rootfs, image, host, facts]
#   requires: [container_runtime, packages]
package gpuhost.runtime.containerd_nvidia_runtime

import data.gpuhost.lib.locate

containerd := object.get(input.container_runtime, "containerd", null)

# The packages that carry the runtime and its hook.
toolkit := {"nvidia-container-toolkit", "nvidia-container-toolkit-base"}

installed contains p.name if some p in object.get(input, "packages", [])

skip contains "containerd is not configured" if containerd == null

# No line sets what is missing: the finding points at the main file.
deny contains {"msg": msg, "file": containerd.config_path} if {
	containerd != null
	not containerd.nvidia_runtime
	msg := sprintf("containerd (%s) defines no nvidia runtime", [containerd.config_path])
}

deny contains finding if {
	containerd.nvidia_runtime
	object.get(containerd, "nvidia_binary", "") == ""
	msg := sprintf("containerd (%s) defines an nvidia runtime with no BinaryName, so it runs plain runc", [containerd.config_path])
	finding := at(msg, "nvidia_runtime")
}

deny contains finding if {
	containerd.nvidia_runtime
	object.get(containerd, "nvidia_binary", "") != ""
	not containerd.nvidia_binary_present
	msg := sprintf(
		"containerd (%s) runs the nvidia runtime from %s, which is not an executable file in the target",
		[containerd.config_path, containerd.nvidia_binary],
	)
	finding := at(msg, "nvidia_binary")
}

deny contains finding if {
	containerd.nvidia_runtime
	missing := toolkit - installed
	count(missing) > 0
	msg := sprintf(
		"containerd (%s) defines an nvidia runtime but the container toolkit is not installed: %s missing",
		[containerd.config_path, concat(", ", sort(missing))],
	)
	finding := at(msg, "nvidia_runtime")
}

# at points a finding at the line that sets setting, when the facts know it
# (the main file or the import that set it last).
at(msg, setting) := locate.at(msg, l.file, l.line) if {
	l := containerd.locations[setting]
} else := msg
