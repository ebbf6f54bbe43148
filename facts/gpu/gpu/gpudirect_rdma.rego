# METADATA
# title: A GPU node with RDMA ports can move GPU memory over them (GPUDirect RDMA)
# description: >-
#   On a host with GPUs and RDMA ports, NCCL and MPI move GPU memory straight to the network when
#   the HCA can reach it: that takes nvidia_peermem (or the older nv_peer_mem) loaded. Without it
#   every transfer bounces through host memory, and a multi-node job runs at a fraction of its
#   speed while reporting nothing. Judged where params.gpu_direct_rdma is true (the default) and
#   the host has both GPUs (NVML's, or NVIDIA display functions on the PCI bus) and RDMA ports.
# scope: package
# custom:
#   id: GH-GPU-028
#   severity: high
#   location: /sys/module
#   remediation: >-
#     Load the module (modprobe nvidia_peermem) and make it load at boot (/etc/modules-load.d),
#     or, on a GPU Operator node, set driver.rdma.enabled. A host that does not use GPUDirect RDMA
#     sets params.gpu_direct_rdma to false.
#   controls:
#     nist-800-53: [CM-6]
#   targets: [host, facts]
#   requires: [infiniband]
#   judges: [gpu, pci]
package gpuhost.gpu.gpudirect_rdma

default wanted := true

wanted := data.gpuhost.params.gpu_direct_rdma

gpus := count(object.get(input, ["gpu", "devices"], [])) + count([d | some d in object.get(input, ["pci", "devices"], []); d.gpu == true])

skip contains "params.gpu_direct_rdma is false" if wanted == false

skip contains "the host has no GPUs (NVML lists none, nor does the PCI bus)" if {
	wanted != false
	gpus == 0
}

skip contains "the host has no RDMA ports" if {
	wanted != false
	count(input.infiniband.ports) == 0
}

deny contains msg if {
	wanted != false
	gpus > 0
	count(input.infiniband.ports) > 0
	input.infiniband.peermem == false
	msg := sprintf(
		"the host has GPUs and %d RDMA ports, but neither nvidia_peermem nor nv_peer_mem is loaded: GPU memory cannot move over RDMA",
		[count(input.infiniband.ports)],
	)
}
