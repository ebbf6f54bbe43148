package gpuhost.gpu.retired_pages_warn_test

import data.gpuhost.gpu.retired_pages_warn as check

host(n) := {"gpu": {"available": true, "devices": [{"index": 1, "uuid": "GPU-1", "retired_pages": {"pending": false, "count": n}}]}}

test_pass_few if {
	msgs(check.deny) == set() with input as host(14) with data.gpuhost.params as {"gpu_retired_pages_warn": 15}
}

test_fail_many if {
	msgs(check.deny) == {"GPU 1 (GPU-1) has 15 retired pages (warning from 15)"} with input as host(15) with data.gpuhost.params as {"gpu_retired_pages_warn": 15}
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}}
}

# msgs is the text of each finding: a string, or a finding object's msg.
msgs(findings) := {m | some f in findings; m := text(f)}

text(f) := f.msg if is_object(f)

text(f) := f if is_string(f)
