package gpuhost.gpu.nvml_errors_test

import data.gpuhost.gpu.nvml_errors as check

test_pass if {
	msgs(check.deny) == set() with input as {"gpu": {"available": true, "devices": [{"index": 0, "uuid": "GPU-0"}]}}
}

test_fail_device if {
	msgs(check.deny) == {"GPU 4 (GPU-4): ecc: NVML call GetEccMode timed out after 5s"} with input as {"gpu": {"available": true, "devices": [{"index": 4, "uuid": "GPU-4", "errors": ["ecc: NVML call GetEccMode timed out after 5s"]}]}}
}

test_fail_system if {
	msgs(check.deny) == {"some NVML queries failed: NVML version: ERROR_UNKNOWN"} with input as {"gpu": {"available": true, "reason": "some NVML queries failed: NVML version: ERROR_UNKNOWN", "devices": []}}
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}}
}

# msgs is the text of each finding: a string, or a finding object's msg.
msgs(findings) := {m | some f in findings; m := text(f)}

text(f) := f.msg if is_object(f)

text(f) := f if is_string(f)
