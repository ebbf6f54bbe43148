package gpuhost.cgroup.kubelet_memory_test

import data.gpuhost.cgroup.kubelet_memory as check

good := {
	"config_path": "/var/lib/kubelet/config.yaml", "cgroup_driver": "systemd",
	"system_reserved_memory": "2Gi", "kube_reserved_memory": "", "eviction_hard_memory": "500Mi",
	"enforce_node_allocatable": [],
}

test_pass_reserved if {
	check.deny == set() with input as {"kubelet": good}
}

test_fail_no_reserve_no_eviction if {
	k := object.union(good, {"system_reserved_memory": "", "eviction_hard_memory": ""})
	count(check.deny) == 2 with input as {"kubelet": k}
}

test_fail_cgroupfs_driver if {
	check.deny == {`/var/lib/kubelet/config.yaml uses the "cgroupfs" cgroup driver; want systemd, as the container runtime uses`} with input as {"kubelet": object.union(good, {"cgroup_driver": "cgroupfs"})}
}

test_fail_allocatable_without_pods if {
	count(check.deny) == 1 with input as {"kubelet": object.union(good, {"enforce_node_allocatable": ["system-reserved"]})}
}
