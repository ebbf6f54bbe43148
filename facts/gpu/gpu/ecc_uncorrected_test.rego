package gpuhost.gpu.ecc_uncorrected_test

import data.gpuhost.gpu.ecc_uncorrected as check

host(vol, agg) := {"gpu": {"available": true, "devices": [{"index": 0, "uuid": "GPU-0", "ecc": {"current": true, "pending": true, "uncorrected_volatile": vol, "uncorrected_aggregate": agg}}]}}

test_pass_clean if {
	msgs(check.deny) == set() with input as host(0, 2)
}

test_fail_errors if {
	msgs(check.deny) == {"GPU 0 (GPU-0) has 2 uncorrected ECC errors since the driver loaded (5 in its lifetime)"} with input as host(2, 5)
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}}
}

# msgs is the text of each finding: a string, or a finding object's msg.
msgs(findings) := {m | some f in findings; m := text(f)}

text(f) := f.msg if is_object(f)

text(f) := f if is_string(f)
