package gpuhost.gpu.gpu_count_test

import data.gpuhost.gpu.gpu_count as check

host(n) := {
	"collectors": {"gpu": {"status": "ok"}, "pci": {"status": "ok"}},
	"gpu": {"available": true, "devices": [{"index": i} | some i in numbers.range(0, n - 1)]},
}

pci_gpu(addr) := {"address": addr, "vendor": "0x10de", "device": "0x20b0", "class": "0x030200", "gpu": true}

nvml_down(pci) := {
	"collectors": {"gpu": {"status": "unavailable", "reason": "NVML init failed: Driver Not Loaded"}, "pci": {"status": "ok"}},
	"gpu": {"available": false, "reason": "NVML init failed: Driver Not Loaded"},
	"pci": {"devices": pci},
}

test_pass if {
	check.deny == set() with input as host(8) with data.gpuhost.params as {"gpu_expected_count": 8}
}

test_fail if {
	check.deny == {"NVML sees 7 GPUs; want 8"} with input as host(7) with data.gpuhost.params as {"gpu_expected_count": 8}
}

test_skip_unset if {
	check.skip == {"params.gpu_expected_count is not set"} with input as host(7) with data.gpuhost.params as {}
}

test_nvml_down_counts_pci if {
	doc := nvml_down([pci_gpu("0000:07:00.0"), {"address": "0000:07:00.1", "vendor": "0x10de", "device": "0x1aef", "class": "0x040300", "gpu": false}])
	check.deny == {"NVML is unavailable; the PCI bus shows 1 NVIDIA GPUs; want 2"} with input as doc with data.gpuhost.params as {"gpu_expected_count": 2}
	check.skip == set() with input as doc with data.gpuhost.params as {"gpu_expected_count": 2}
}

test_nvml_down_pci_matches if {
	doc := nvml_down([pci_gpu("0000:07:00.0"), pci_gpu("0000:0f:00.0")])
	check.deny == set() with input as doc with data.gpuhost.params as {"gpu_expected_count": 2}
}

test_skip_nothing_readable if {
	doc := {"collectors": {"gpu": {"status": "unavailable", "reason": "x"}, "pci": {"status": "unavailable", "reason": "no sysfs"}}, "gpu": {"available": false, "reason": "x"}}
	check.skip == {"neither NVML (x) nor the PCI bus (no sysfs) could be read"} with input as doc with data.gpuhost.params as {"gpu_expected_count": 8}
}

test_skip_reasons_from_the_collectors if {
	doc := {"collectors": {"gpu": {"status": "error", "reason": "NVML hung"}}}
	check.skip == {"neither NVML (NVML hung) nor the PCI bus (did not run) could be read"} with input as doc with data.gpuhost.params as {"gpu_expected_count": 8}
}
