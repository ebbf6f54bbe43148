package gpuhost.gpu.pcie_aer_test

import data.gpuhost.gpu.pcie_aer as check

gpu(aer) := {"address": "0000:07:00.0", "vendor": "0x10de", "device": "0x20b2", "class": "0x030200", "gpu": true, "aer": aer}

host(devices) := {"pci": {"devices": devices}}

clean := {"correctable": 3, "nonfatal": 0, "fatal": 0}

test_pass if {
	check.deny == set() with input as host([gpu(clean)])
	check.deny == set() with input as host([object.remove(gpu(clean), ["aer"])])
	check.error == set() with input as host([gpu(clean)])
}

test_fail_uncorrectable if {
	check.deny == {{
		"msg": "the GPU at 0000:07:00.0 has reported 1 fatal and 2 non-fatal uncorrectable PCIe errors (AER) since boot",
		"subject": "0000:07:00.0",
	}} with input as host([gpu({"correctable": 0, "nonfatal": 2, "fatal": 1})])
}

# A NVSwitch or audio function is not a GPU: its counters are not judged here.
test_other_functions_not_judged if {
	other := object.union(gpu({"correctable": 0, "nonfatal": 5, "fatal": 0}), {"gpu": false, "class": "0x068000"})
	check.deny == set() with input as host([other])
}

test_correctable_bound_from_params if {
	check.deny == set() with input as host([gpu(clean)])
		with data.gpuhost.params.gpu_aer_correctable_max as 3
	check.deny == {{
		"msg": "the GPU at 0000:07:00.0 has reported 3 correctable PCIe errors (AER) since boot, above params.gpu_aer_correctable_max (2)",
		"subject": "0000:07:00.0",
	}} with input as host([gpu(clean)])
		with data.gpuhost.params.gpu_aer_correctable_max as 2
}

test_error_unreadable if {
	bad := object.union(object.remove(gpu(clean), ["aer"]), {"aer_error": "x"})
	check.error == {{"msg": "the AER counters of the GPU at 0000:07:00.0 could not be read: x", "subject": "0000:07:00.0"}} with input as host([bad])
}
