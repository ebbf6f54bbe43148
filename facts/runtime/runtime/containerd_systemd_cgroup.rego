# METADATA
# title: containerd runtimes use the systemd cgroup driver
# description: >-
#   The default runc runtime and the nvidia runtime must both set SystemdCgroup = true in their
#   options. An unset option means the cgroupfs driver, which fights systemd for the cgroup tree
#   and makes GPU containers lose their devices (NVIDIA/nvidia-docker#1788). Skips when
#   containerd is not configured.
# scope: package
# custom:
#   id: GH-RT-002
#   severity: high
#   location: /etc/containerd/config.toml
#   remediation: >-
#     Set SystemdCgroup = true under the runc and nvidia runtimes' options (containerd 2.x -
#     plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.<name>.options), then restart containerd.
#   controls:
#     nist-800-53: [CM-2, CM-6]
#   targets: [rootfs, image, host, facts]
#   requires: [container_runtime]
package gpuhost.runtime.containerd_systemd_cgroup

import data.gpuhost.lib.locate

containerd := object.get(input.container_runtime, "containerd", null)

why := "GPU containers lose their devices when systemd reloads (NVIDIA/nvidia-docker#1788)"

skip contains "containerd is not configured" if containerd == null

state(false) := "false"

state(null) := "unset"

deny contains finding if {
	containerd != null
	v := object.get(containerd, "systemd_cgroup", null)
	v != true
	msg := sprintf("containerd (%s): SystemdCgroup is %s for the default runtime; %s", [containerd.config_path, state(v), why])
	finding := at(msg, "systemd_cgroup")
}

deny contains finding if {
	containerd != null
	containerd.nvidia_runtime
	v := object.get(containerd, "nvidia_systemd_cgroup", null)
	v != true
	msg := sprintf("containerd (%s): SystemdCgroup is %s for the nvidia runtime; %s", [containerd.config_path, state(v), why])
	finding := at(msg, "nvidia_systemd_cgroup")
}

# at points a finding at the line that sets setting, when the facts know it
# (the main file or the import that set it last).
at(msg, setting) := locate.at(msg, l.file, l.line) if {
	l := containerd.locations[setting]
} else := msg
