package gpuhost.gpu.gpudirect_rdma_test

import data.gpuhost.gpu.gpudirect_rdma as check

node(peermem) := {
	"gpu": {"available": true, "devices": [{"index": 0, "uuid": "GPU-0"}]},
	"infiniband": {"ports": [{"device": "mlx5_0", "port": 1}], "peermem": peermem},
}

test_pass if {
	check.deny == set() with input as node(true)
	check.skip == set() with input as node(true)
}

test_fail_without_peermem if {
	check.deny == {"the host has GPUs and 1 RDMA ports, but neither nvidia_peermem nor nv_peer_mem is loaded: GPU memory cannot move over RDMA"} with input as node(false)
}

test_gpus_from_the_pci_bus if {
	f := object.union(object.remove(node(false), ["gpu"]), {"pci": {"devices": [{"address": "0000:07:00.0", "gpu": true}]}})
	count(check.deny) == 1 with input as f
}

test_skips if {
	check.skip == {"params.gpu_direct_rdma is false"} with input as node(false)
		with data.gpuhost.params.gpu_direct_rdma as false
	check.deny == set() with input as node(false)
		with data.gpuhost.params.gpu_direct_rdma as false
	check.skip == {"the host has no GPUs (NVML lists none, nor does the PCI bus)"} with input as {"infiniband": {"ports": [{"device": "mlx5_0", "port": 1}], "peermem": false}}
}
