package gpuhost.gpu.retired_pages_test

import data.gpuhost.gpu.retired_pages as check

host(pending, n) := {"gpu": {"available": true, "devices": [{"index": 1, "uuid": "GPU-1", "retired_pages": {"pending": pending, "count": n}}]}}

test_pass_few if {
	msgs(check.deny) == set() with input as host(false, 62) with data.gpuhost.params as {"gpu_retired_pages_max": 63}
}

test_fail_pending if {
	msgs(check.deny) == {"GPU 1 (GPU-1) has a page retirement pending a GPU reset"} with input as host(true, 1) with data.gpuhost.params as {"gpu_retired_pages_max": 63}
}

test_fail_many if {
	msgs(check.deny) == {"GPU 1 (GPU-1) has 63 retired pages; the limit is 63"} with input as host(false, 63) with data.gpuhost.params as {"gpu_retired_pages_max": 63}
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}}
}

# msgs is the text of each finding: a string, or a finding object's msg.
msgs(findings) := {m | some f in findings; m := text(f)}

text(f) := f.msg if is_object(f)

text(f) := f if is_string(f)
