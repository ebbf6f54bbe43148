package gpuhost.gpu.conf_compute_test

import data.gpuhost.gpu.conf_compute as check

host(feature, devtools) := {"gpu": {"available": true, "devices": [], "conf_compute": {"feature": feature, "devtools_mode": devtools, "environment": "prod"}}}

req := {"gpu_require_cc": true}

test_pass if {
	check.deny == set() with input as host("on", "off") with data.gpuhost.params as req
}

test_fail_off if {
	check.deny == {"confidential computing is off; want on"} with input as host("off", "off") with data.gpuhost.params as req
}

test_fail_devtools if {
	check.deny == {"confidential computing devtools mode is on; want off"} with input as host("on", "on") with data.gpuhost.params as req
}

test_fail_unsupported if {
	check.deny == {"NVML reports no confidential computing state: the driver or the GPUs do not support it"} with input as {"gpu": {"available": true, "devices": []}} with data.gpuhost.params as req
}

test_skip_not_required if {
	check.skip == {"params.gpu_require_cc is false: confidential computing is not required"} with input as host("off", "on") with data.gpuhost.params as {"gpu_require_cc": false}
	check.deny == set() with input as host("off", "on") with data.gpuhost.params as {"gpu_require_cc": false}
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}} with data.gpuhost.params as req
}
