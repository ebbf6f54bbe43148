package gpuhost.runtime.containerd_nvidia_runtime_test

import data.gpuhost.runtime.containerd_nvidia_runtime as check

facts(nvidia) := {"target": {"kind": "image"}, "container_runtime": {
	"containerd": {
		"config_path": "/etc/containerd/config.toml",
		"nvidia_runtime": nvidia,
		"default_runtime": "runc",
	},
	"cdi_specs": [],
}}

test_pass_nvidia if {
	check.deny == set() with input as facts(true)
	check.skip == set() with input as facts(true)
}

test_fail_no_nvidia if {
	check.deny == {"containerd (/etc/containerd/config.toml) defines no nvidia runtime"} with input as facts(false)
}

test_skip_no_containerd if {
	f := {"target": {"kind": "image"}, "container_runtime": {"cdi_specs": []}}
	check.skip == {"containerd is not configured"} with input as f
	check.deny == set() with input as f
}
