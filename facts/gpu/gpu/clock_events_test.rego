package gpuhost.gpu.clock_events_test

import data.gpuhost.gpu.clock_events as check

host(reasons) := {"gpu": {"available": true, "devices": [{"index": 0, "uuid": "GPU-0", "throttle_reasons": reasons}]}}

test_pass_normal_reasons if {
	check.deny == set() with input as host(["gpu_idle"])
	check.deny == set() with input as host(["sw_power_cap", "sync_boost"])
	check.deny == set() with input as {"gpu": {"available": true, "devices": [{"index": 0, "uuid": "GPU-0"}]}}
}

test_fail_hardware_and_thermal if {
	check.deny == {{"msg": "GPU 0 (GPU-0) runs with its clocks held down: hw_slowdown, hw_thermal_slowdown", "subject": "GPU-0"}} with input as host(["sw_power_cap", "hw_slowdown", "hw_thermal_slowdown"])
	check.deny == {{"msg": "GPU 0 (GPU-0) runs with its clocks held down: 0x400", "subject": "GPU-0"}} with input as host(["0x400"])
}

test_params_allow_more if {
	check.deny == set() with input as host(["sw_thermal_slowdown"])
		with data.gpuhost.params.gpu_clock_events_allowed as ["sw_thermal_slowdown"]
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}}
}
