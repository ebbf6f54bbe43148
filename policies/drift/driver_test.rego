package gpuhost.drift.driver_test

import data.gpuhost.drift.driver as check

manifest(d) := {"schema": "gpuhost.manifest/v1", "pins": {"driver": d}}

gpu(v) := {"available": true, "driver_version": v, "devices": [], "xid_events": []}

test_pass_same_driver if {
	f := {"target": {"kind": "host"}, "manifest": manifest("535.261.03-1"), "gpu": gpu("535.261.03")}
	check.deny == set() with input as f
	check.skip == set() with input as f
}

test_pass_epoch_and_ubuntu_revision if {
	f := {"target": {"kind": "host"}, "manifest": manifest("1:535.161.08-0ubuntu2"), "gpu": gpu("535.161.08")}
	check.deny == set() with input as f
}

test_fail_other_driver if {
	f := {"target": {"kind": "host"}, "manifest": manifest("535.261.03-1"), "gpu": gpu("550.54.15")}
	check.deny == {"NVML reports driver 550.54.15; the baseline pins 535.261.03-1"} with input as f
}

test_skip_no_pin if {
	f := {"target": {"kind": "host"}, "manifest": {"schema": "gpuhost.manifest/v1", "pins": {}}, "gpu": gpu("550.54.15")}
	check.skip == {"the baseline pins no driver"} with input as f
	check.deny == set() with input as f
}

test_skip_unavailable if {
	f := {"target": {"kind": "host"}, "manifest": manifest("535.261.03-1"), "gpu": {"available": false, "reason": "libnvidia-ml.so.1 not found", "devices": [], "xid_events": []}}
	check.skip == {"NVML is unavailable: libnvidia-ml.so.1 not found"} with input as f
	check.deny == set() with input as f
}

test_skip_no_gpu_facts if {
	f := {"target": {"kind": "host"}, "manifest": manifest("535.261.03-1")}
	check.skip == {"NVML is unavailable: no GPU facts"} with input as f
}
