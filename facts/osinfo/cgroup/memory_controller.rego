# METADATA
# title: The memory controller is enabled for the host's cgroups
# description: >-
#   With cgroup v2, memory limits (a container's, a slice's, the kubelet's node allocatable) take
#   effect only when the root cgroup's cgroup.subtree_control enables the memory controller for its
#   children. Without it, a runaway process is bounded by nothing but the kernel's OOM killer.
#   Read from the live cgroup tree; an image decides it only at boot.
# scope: package
# custom:
#   id: GH-CGR-002
#   severity: high
#   location: /etc/default/grub
#   remediation: >-
#     Boot with systemd managing the unified hierarchy (it enables the controllers units ask for),
#     or run "echo +memory > /sys/fs/cgroup/cgroup.subtree_control"; do not boot with
#     cgroup_disable=memory.
#   controls:
#     nist-800-53: [SC-6, CM-6]
#   targets: [host, facts]
#   requires: [cgroup]
package gpuhost.cgroup.memory_controller

skip contains "cgroup v2 is not in use: GH-CGR-001 judges the hierarchy" if input.cgroup.version != 2

error contains "the memory controller's state was not read (no cgroup.subtree_control)" if {
	input.cgroup.version == 2
	not is_boolean(object.get(input.cgroup, ["memory", "controller_enabled"], null))
}

deny contains "the root cgroup does not enable the memory controller for its children (cgroup.subtree_control); memory limits have no effect" if {
	input.cgroup.memory.controller_enabled == false
}
