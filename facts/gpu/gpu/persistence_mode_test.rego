package gpuhost.gpu.persistence_mode_test

import data.gpuhost.gpu.persistence_mode as check

host(on) := {"gpu": {"available": true, "devices": [{"index": 0, "uuid": "GPU-0", "persistence_mode": on}]}}

test_pass if {
	msgs(check.deny) == set() with input as host(true)
}

test_fail if {
	msgs(check.deny) == {"GPU 0 (GPU-0) runs with persistence mode off"} with input as host(false)
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}}
}

# msgs is the text of each finding: a string, or a finding object's msg.
msgs(findings) := {m | some f in findings; m := text(f)}

text(f) := f.msg if is_object(f)

text(f) := f if is_string(f)
