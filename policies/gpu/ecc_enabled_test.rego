package gpuhost.gpu.ecc_enabled_test

import data.gpuhost.gpu.ecc_enabled as check

dev(cur, pend) := {"index": 3, "uuid": "GPU-3", "ecc": {"current": cur, "pending": pend, "uncorrected_volatile": 0, "uncorrected_aggregate": 0}}

host(devs) := {"gpu": {"available": true, "devices": devs}}

test_pass_on if {
	check.deny == set() with input as host([dev(true, true), {"index": 4, "uuid": "GPU-4", "unsupported": ["ecc"]}])
}

test_fail_off if {
	check.deny == {"GPU 3 (GPU-3) runs with ECC off"} with input as host([dev(false, false)])
}

test_fail_pending if {
	check.deny == {"GPU 3 (GPU-3) has an ECC mode change pending (current true, pending false)"} with input as host([dev(true, false)])
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}}
}
