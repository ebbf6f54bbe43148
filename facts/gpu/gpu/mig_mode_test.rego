package gpuhost.gpu.mig_mode_test

import data.gpuhost.gpu.mig_mode as check

host(cur, pend) := {"gpu": {"available": true, "devices": [{"index": 5, "uuid": "GPU-5", "mig": {"current": cur, "pending": pend}}]}}

test_pass if {
	msgs(check.deny) == set() with input as host(false, false) with data.gpuhost.params as {"gpu_mig": false}
	msgs(check.deny) == set() with input as host(true, true) with data.gpuhost.params as {"gpu_mig": true}
}

test_fail_wrong_mode if {
	msgs(check.deny) == {"GPU 5 (GPU-5) has MIG mode true; want false"} with input as host(true, true) with data.gpuhost.params as {"gpu_mig": false}
}

test_fail_pending if {
	msgs(check.deny) == {"GPU 5 (GPU-5) has a MIG mode change pending a reset (current false, pending true)"} with input as host(false, true) with data.gpuhost.params as {"gpu_mig": false}
}

test_skip_unset if {
	check.skip == {"params.gpu_mig is not set: no MIG mode is expected"} with input as host(true, true) with data.gpuhost.params as {"gpu_mig": null}
	msgs(check.deny) == set() with input as host(true, true) with data.gpuhost.params as {"gpu_mig": null}
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}} with data.gpuhost.params as {"gpu_mig": true}
}

test_skip_absent if {
	check.skip == {"params.gpu_mig is not set: no MIG mode is expected"} with input as host(true, false) with data.gpuhost.params as {}
	msgs(check.deny) == set() with input as host(true, false) with data.gpuhost.params as {}
}

test_fail_wrong_mode_and_pending if {
	msgs(check.deny) == {
		"GPU 5 (GPU-5) has MIG mode true; want false",
		"GPU 5 (GPU-5) has a MIG mode change pending a reset (current true, pending false)",
	} with input as host(true, false) with data.gpuhost.params as {"gpu_mig": false}
}

# msgs is the text of each finding: a string, or a finding object's msg.
msgs(findings) := {m | some f in findings; m := text(f)}

text(f) := f.msg if is_object(f)

text(f) := f if is_string(f)
