package gpuhost.gpu.vbios_test

import data.gpuhost.gpu.vbios as check

gpu(i, name, v) := {"index": i, "uuid": sprintf("GPU-%d", [i]), "name": name, "vbios_version": v}

host(devices) := {"gpu": {"available": true, "devices": devices}}

test_pass_one_version_per_product if {
	check.deny == set() with input as host([gpu(0, "A100", "92.1"), gpu(1, "A100", "92.1"), gpu(2, "L4", "95.0")])
	check.deny == set() with input as host([gpu(0, "A100", "92.1"), {"index": 1, "uuid": "GPU-1", "name": "A100"}])
}

test_fail_the_odd_one if {
	check.deny == {{"msg": "GPU 2 (GPU-2) runs VBIOS 92.0, unlike the 2 other A100 GPUs on the node, which run 92.1", "subject": "GPU-2"}} with input as host([gpu(0, "A100", "92.1"), gpu(1, "A100", "92.1"), gpu(2, "A100", "92.0"), gpu(3, "L4", "95.0")])
}

# With as many on each version, the greatest is taken as the one wanted.
test_fail_a_tie_names_the_older if {
	check.deny == {{"msg": "GPU 0 (GPU-0) runs VBIOS 92.0, unlike the 1 other A100 GPUs on the node, which run 92.1", "subject": "GPU-0"}} with input as host([gpu(0, "A100", "92.0"), gpu(1, "A100", "92.1")])
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}}
}
