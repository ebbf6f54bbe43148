# METADATA
# title: The kubelet keeps memory for the system and evicts pods before the kernel kills
# description: >-
#   On a Kubernetes GPU node the kubelet must reserve memory for the system and for its own
#   daemons (systemReserved or kubeReserved memory), evict pods while memory is still available
#   (evictionHard memory.available), enforce node allocatable on pods, and use the systemd cgroup
#   driver like the container runtime. Otherwise pods can take the memory the node needs and the
#   kernel's OOM killer, not the kubelet, picks what dies. Read from the kubelet's
#   configuration file; not applicable where no kubelet is configured.
# scope: package
# custom:
#   id: GH-CGR-003
#   severity: high
#   location: /var/lib/kubelet/config.yaml
#   remediation: >-
#     In /var/lib/kubelet/config.yaml set cgroupDriver: systemd, systemReserved: {memory: 2Gi} (or
#     kubeReserved), evictionHard: {memory.available: 500Mi} and enforceNodeAllocatable: [pods], then
#     restart the kubelet.
#   controls:
#     nist-800-53: [SC-6, CM-6]
#   targets: [rootfs, image, host, facts]
#   requires: [kubelet]
package gpuhost.cgroup.kubelet_memory

k := input.kubelet

deny contains sprintf("%s reserves no memory for the system or Kubernetes (systemReserved and kubeReserved have no memory)", [k.config_path]) if {
	k.system_reserved_memory == ""
	k.kube_reserved_memory == ""
}

deny contains sprintf("%s sets no evictionHard memory.available: the kernel's OOM killer, not the kubelet, decides what dies", [k.config_path]) if {
	k.eviction_hard_memory == ""
}

deny contains sprintf("%s does not enforce node allocatable on pods (enforceNodeAllocatable %v)", [k.config_path, k.enforce_node_allocatable]) if {
	count(k.enforce_node_allocatable) > 0
	not "pods" in k.enforce_node_allocatable
}

deny contains sprintf("%s uses the %q cgroup driver; want systemd, as the container runtime uses", [k.config_path, k.cgroup_driver]) if {
	k.cgroup_driver != "systemd"
}
