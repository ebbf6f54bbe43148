package gpuhost.runtime.cdi_spec_gpus_test

import data.gpuhost.runtime.cdi_spec_gpus as check

host(cdi, specs, n) := {
	"container_runtime": {"containerd": {"cdi_enabled": cdi}, "cdi_specs": specs},
	"gpu": {"available": true, "devices": [{"index": i, "uuid": sprintf("GPU-%d", [i])} | some i in numbers.range(0, n - 1)]},
}

spec(names) := {"file": "/var/run/cdi/nvidia.yaml", "kind": "nvidia.com/gpu", "devices": names}

test_pass_by_index if {
	check.deny == set() with input as host(true, [spec(["0", "1", "all"])], 2)
	check.skip == set() with input as host(true, [spec(["0", "1", "all"])], 2)
}

test_pass_by_uuid if {
	check.deny == set() with input as host(true, [spec(["GPU-0", "GPU-1", "all"])], 2)
}

test_fail_missing_spec if {
	check.deny == {"CDI is enabled but no nvidia.com/gpu CDI spec is in /etc/cdi or /var/run/cdi"} with input as host(true, [], 2)
}

test_fail_stale_spec if {
	check.deny == {"the CDI specs (/var/run/cdi/nvidia.yaml) name 2 GPUs; NVML sees 4"} with input as host(true, [spec(["0", "1", "0:0", "all"])], 4)
}

test_other_kinds_do_not_count if {
	other := {"file": "/etc/cdi/x.yaml", "kind": "example.com/fpga", "devices": ["0"]}
	check.deny == {"CDI is enabled but no nvidia.com/gpu CDI spec is in /etc/cdi or /var/run/cdi"} with input as host(true, [other], 1)
}

test_skip_cdi_off if {
	check.skip == {"containerd does not enable CDI"} with input as host(false, [], 2)
	check.deny == set() with input as host(false, [], 2)
}

test_skip_nvml_down if {
	doc := {"container_runtime": {"containerd": {"cdi_enabled": true}, "cdi_specs": []}, "gpu": {"available": false, "reason": "no driver"}}
	check.skip == {"NVML is unavailable: no driver"} with input as doc
}
