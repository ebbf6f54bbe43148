package gpuhost.gpu.remapped_rows_test

import data.gpuhost.gpu.remapped_rows as check

host(pending, failed) := {"gpu": {"available": true, "devices": [{"index": 2, "uuid": "GPU-2", "remapped_rows": {"correctable": 1, "uncorrectable": 1, "pending": pending, "failed": failed}}]}}

test_pass if {
	msgs(check.deny) == set() with input as host(false, false)
}

test_fail_pending if {
	msgs(check.deny) == {"GPU 2 (GPU-2) has a row remap pending a GPU reset (1 uncorrectable rows remapped)"} with input as host(true, false)
}

test_fail_failed if {
	msgs(check.deny) == {"GPU 2 (GPU-2) failed to remap a row: it has no spare rows left"} with input as host(false, true)
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}}
}

# msgs is the text of each finding: a string, or a finding object's msg.
msgs(findings) := {m | some f in findings; m := text(f)}

text(f) := f.msg if is_object(f)

text(f) := f if is_string(f)
