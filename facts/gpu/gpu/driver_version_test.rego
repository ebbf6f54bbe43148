package gpuhost.gpu.driver_version_test

import data.gpuhost.gpu.driver_version as check

gpu(v) := {"target": {"kind": "host"}, "gpu": {"available": true, "driver_version": v, "devices": [], "xid_events": []}}

params := {"gpu_driver_version": "535.261.03"}

test_pass_pinned if {
	check.deny == set() with input as gpu("535.261.03") with data.gpuhost.params as params
	check.skip == set() with input as gpu("535.261.03") with data.gpuhost.params as params
}

test_fail_other_driver if {
	check.deny == {"driver 550.54.15 is running; pinned to 535.261.03"} with input as gpu("550.54.15") with data.gpuhost.params as params
}

test_fail_unknown_driver if {
	check.deny == {"NVML did not report a driver version; pinned to 535.261.03"} with input as {"gpu": {"available": true}} with data.gpuhost.params as params
}

test_skip_unpinned if {
	check.skip == {"params.gpu_driver_version is not set: no driver is pinned"} with input as gpu("550.54.15") with data.gpuhost.params as {"gpu_driver_version": null}
	check.deny == set() with input as gpu("550.54.15") with data.gpuhost.params as {}
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: NVML init failed: ERROR_DRIVER_NOT_LOADED"} with input as {"gpu": {"available": false, "reason": "NVML init failed: ERROR_DRIVER_NOT_LOADED"}} with data.gpuhost.params as params
}
