package gpuhost.gpu.ecc_enabled_test

import data.gpuhost.gpu.ecc_enabled as check

dev(cur, pend) := {"index": 3, "uuid": "GPU-3", "ecc": {"current": cur, "pending": pend, "uncorrected_volatile": 0, "uncorrected_aggregate": 0}}

host(devs) := {"gpu": {"available": true, "devices": devs}}

test_pass_on if {
	msgs(check.deny) == set() with input as host([dev(true, true), {"index": 4, "uuid": "GPU-4", "unsupported": ["ecc"]}])
}

test_fail_off if {
	msgs(check.deny) == {"GPU 3 (GPU-3) runs with ECC off"} with input as host([dev(false, false)])
}

test_fail_pending if {
	msgs(check.deny) == {"GPU 3 (GPU-3) has an ECC mode change pending (current true, pending false)"} with input as host([dev(true, false)])
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}}
}

# msgs is the text of each finding: a string, or a finding object's msg.
msgs(findings) := {m | some f in findings; m := text(f)}

text(f) := f.msg if is_object(f)

text(f) := f if is_string(f)

test_finding_names_the_gpu if {
	some f in check.deny with input as host([dev(false, false)])
	f.subject == "GPU-3"
}
