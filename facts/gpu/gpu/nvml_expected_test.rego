package gpuhost.gpu.nvml_expected_test

import data.gpuhost.gpu.nvml_expected as check

down := {
	"collectors": {"gpu": {"status": "unavailable", "reason": "NVML init failed: Driver Not Loaded"}, "pci": {"status": "ok"}},
	"gpu": {"available": false, "reason": "NVML init failed: Driver Not Loaded"},
	"pci": {"devices": [
		{"address": "0000:07:00.0", "vendor": "0x10de", "device": "0x20b0", "class": "0x030200", "gpu": true},
		{"address": "0000:07:00.1", "vendor": "0x10de", "device": "0x1aef", "class": "0x040300", "gpu": false},
	]},
}

test_fail_pci_gpus_nvml_down if {
	check.deny == {"NVML is unavailable (NVML init failed: Driver Not Loaded) on a host that should have GPUs: the PCI bus shows 1 NVIDIA GPUs (0000:07:00.0 0x10de:0x20b0)"} with input as down with data.gpuhost.params as {}
}

test_fail_every_reason_named if {
	doc := object.union(down, {
		"gpu_driver": {"packages": [{"name": "libnvidia-ml1", "version": "535.261.03-1"}]},
		"manifest": {"pins": {"driver": "535.261.03"}},
	})
	check.deny == {"NVML is unavailable (NVML init failed: Driver Not Loaded) on a host that should have GPUs: NVIDIA driver packages are installed (libnvidia-ml1 535.261.03-1); params.gpu_expected_count is 8; the PCI bus shows 1 NVIDIA GPUs (0000:07:00.0 0x10de:0x20b0); the baked manifest pins driver 535.261.03"} with input as doc with data.gpuhost.params as {"gpu_expected_count": 8}
}

test_fail_collector_missing if {
	check.deny == {"the gpu collector did not run on a host that should have GPUs: params.gpu_expected_count is 2"} with input as {"collectors": {}} with data.gpuhost.params as {"gpu_expected_count": 2}
}

test_fail_available_false_with_ok_collector if {
	# A driver/library mismatch: the collector succeeded, NVML did not start.
	doc := {"collectors": {"gpu": {"status": "ok"}}, "gpu": {"available": false, "reason": "NVML init failed: Driver/library version mismatch", "driver_mismatch": true}}
	check.deny == {"NVML is unavailable (NVML init failed: Driver/library version mismatch) on a host that should have GPUs: params.gpu_expected_count is 8"} with input as doc with data.gpuhost.params as {"gpu_expected_count": 8}
}

test_pass_nvml_up if {
	doc := {"collectors": {"gpu": {"status": "ok"}, "pci": {"status": "ok"}}, "gpu": {"available": true, "devices": [{"index": 0}]}, "pci": down.pci}
	check.deny == set() with input as doc with data.gpuhost.params as {"gpu_expected_count": 1}
	check.skip == set() with input as doc with data.gpuhost.params as {"gpu_expected_count": 1}
}

test_skip_cpu_host if {
	doc := {"collectors": {"gpu": {"status": "unavailable", "reason": "NVML library not found"}, "pci": {"status": "ok"}}, "gpu": {"available": false}, "pci": {"devices": []}}
	count(check.skip) == 1 with input as doc with data.gpuhost.params as {"gpu_expected_count": 0}
	check.deny == set() with input as doc with data.gpuhost.params as {"gpu_expected_count": 0}
}
