package gpuhost.gpu.xid_events_test

import data.gpuhost.gpu.xid_events as check

params := {"gpu_critical_xids": {"79": "GPU has fallen off the bus", "48": "double-bit ECC error"}}

host(events) := {"gpu": {
	"available": true, "xid_source": "/var/log/kern.log",
	"devices": [{"index": 3, "uuid": "GPU-3", "pci_bus_id": "00000000:07:00.0"}],
	"xid_events": events,
}}

test_pass_app_error if {
	check.deny == set() with input as host([{"code": 13, "pci_bus_id": "0000:07:00", "time": "Mar  8 10:11:12", "gpus": [{"index": 3, "uuid": "GPU-3"}]}]) with data.gpuhost.params as params
}

test_fail_known_gpu if {
	check.deny == {"GPU 3 (GPU-3) logged Xid 79 (GPU has fallen off the bus) at Mar  8 10:11:12: pid=1"} with input as host([{"code": 79, "pci_bus_id": "0000:07:00", "time": "Mar  8 10:11:12", "message": "pid=1", "gpus": [{"index": 3, "uuid": "GPU-3"}]}]) with data.gpuhost.params as params
}

test_fail_unknown_gpu if {
	check.deny == {"the GPU at PCI 0000:41:00 logged Xid 48 (double-bit ECC error) at an unknown time: "} with input as host([{"code": 48, "pci_bus_id": "0000:41:00"}]) with data.gpuhost.params as params
}

test_fail_empty_gpu_list if {
	check.deny == {"the GPU at PCI 0000:41:00 logged Xid 48 (double-bit ECC error) at an unknown time: "} with input as host([{"code": 48, "pci_bus_id": "0000:41:00", "gpus": []}]) with data.gpuhost.params as params
}

test_skip_no_log if {
	check.skip == {"the kernel log could not be read: no kernel log file"} with input as {"gpu": {"available": true, "xid_error": "no kernel log file", "devices": [], "xid_events": []}} with data.gpuhost.params as params
}

test_fail_two_gpus_at_one_address if {
	h := host([{"code": 79, "pci_bus_id": "0000:07:00", "gpus": [{"index": 0, "uuid": "GPU-0"}, {"index": 1, "uuid": "GPU-1"}]}])
	check.deny == {"GPU 0 (GPU-0) and GPU 1 (GPU-1) logged Xid 79 (GPU has fallen off the bus) at an unknown time: "} with input as h with data.gpuhost.params as params
}

test_pass_no_critical_codes if {
	check.deny == set() with input as host([{"code": 79, "pci_bus_id": "0000:07:00"}]) with data.gpuhost.params as {}
}

test_nvml_down_still_judged if {
	doc := {"gpu": {"available": false, "reason": "NVML init failed: Driver Not Loaded", "xid_source": "/var/log/kern.log", "devices": [], "xid_events": [{"code": 79, "pci_bus_id": "0000:07:00", "time": "Mar  8 10:11:12", "message": "pid=1"}]}}
	check.deny == {"the GPU at PCI 0000:07:00 logged Xid 79 (GPU has fallen off the bus) at Mar  8 10:11:12: pid=1"} with input as doc with data.gpuhost.params as params
	check.skip == set() with input as doc with data.gpuhost.params as params
}

test_skip_no_gpu_facts if {
	check.skip == {"the kernel log was not read: the gpu collector did not run"} with input as {"collectors": {}} with data.gpuhost.params as params
}
