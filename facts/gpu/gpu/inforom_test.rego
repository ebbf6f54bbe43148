package gpuhost.gpu.inforom_test

import data.gpuhost.gpu.inforom as check

host(d) := {"gpu": {"available": true, "devices": [object.union({"index": 0, "uuid": "GPU-0"}, d)]}}

test_pass if {
	check.deny == set() with input as host({"inforom_valid": true})
	check.deny == set() with input as host({})
}

test_fail if {
	check.deny == {{"msg": "GPU 0 (GPU-0) fails InfoROM validation: its ECC, retired-page and remapped-row records cannot be trusted", "subject": "GPU-0"}} with input as host({"inforom_valid": false})
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}}
}
