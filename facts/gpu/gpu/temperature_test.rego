package gpuhost.gpu.temperature_test

import data.gpuhost.gpu.temperature as check

host(t) := {"gpu": {"available": true, "devices": [{"index": 0, "uuid": "GPU-0", "temperature_c": t, "temperature_slowdown_c": 90}]}}

test_pass if {
	msgs(check.deny) == set() with input as host(79) with data.gpuhost.params as {"gpu_temperature_margin_c": 10}
}

test_fail if {
	msgs(check.deny) == {"GPU 0 (GPU-0) is at 80C; it slows down at 90C and must stay 10C below"} with input as host(80) with data.gpuhost.params as {"gpu_temperature_margin_c": 10}
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}}
}

test_default_margin if {
	msgs(check.deny) == {"GPU 0 (GPU-0) is at 81C; it slows down at 90C and must stay 10C below"} with input as host(81) with data.gpuhost.params as {}
	msgs(check.deny) == set() with input as host(79) with data.gpuhost.params as {}
}

# msgs is the text of each finding: a string, or a finding object's msg.
msgs(findings) := {m | some f in findings; m := text(f)}

text(f) := f.msg if is_object(f)

text(f) := f if is_string(f)
