package gpuhost.gpu.gpu_count_test

import data.gpuhost.gpu.gpu_count as check

host(n) := {"gpu": {"available": true, "devices": [{"index": i} | some i in numbers.range(0, n - 1)]}}

test_pass if {
	check.deny == set() with input as host(8) with data.gpuhost.params as {"gpu_expected_count": 8}
}

test_fail if {
	check.deny == {"NVML sees 7 GPUs; want 8"} with input as host(7) with data.gpuhost.params as {"gpu_expected_count": 8}
}

test_skip_unset if {
	check.skip == {"params.gpu_expected_count is not set"} with input as host(7) with data.gpuhost.params as {}
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}} with data.gpuhost.params as {"gpu_expected_count": 8}
}
