package gpuhost.gpu.driver_mismatch_test

import data.gpuhost.gpu.driver_mismatch as check

test_pass_same if {
	check.deny == set() with input as {"gpu": {"available": true, "driver_version": "550.54.15", "kernel_module_version": "550.54.15"}}
}

test_fail_differ if {
	check.deny == {"kernel module 535.261.03 is loaded but the NVML library is 550.54.15"} with input as {"gpu": {"available": true, "driver_version": "550.54.15", "kernel_module_version": "535.261.03"}}
}

test_fail_init_mismatch if {
	check.deny == {"NVML refuses to start, the driver library and the loaded kernel module 535.261.03 differ: NVML init failed: ERROR_LIB_RM_VERSION_MISMATCH"} with input as {"gpu": {"available": false, "driver_mismatch": true, "kernel_module_version": "535.261.03", "reason": "NVML init failed: ERROR_LIB_RM_VERSION_MISMATCH"}}
	check.skip == set() with input as {"gpu": {"available": false, "driver_mismatch": true}}
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: no library"} with input as {"gpu": {"available": false, "reason": "no library"}}
}
