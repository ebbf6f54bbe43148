package gpuhost.runtime.containerd_gpu_default_test

import data.gpuhost.runtime.containerd_gpu_default as check

facts(rt, cdi) := {"target": {"kind": "image"}, "container_runtime": {
	"containerd": {
		"config_path": "/etc/containerd/config.toml",
		"nvidia_runtime": true,
		"default_runtime": rt,
		"cdi_enabled": cdi,
	},
	"cdi_specs": [],
}}

test_pass_default_nvidia if {
	check.deny == set() with input as facts("nvidia", false)
	check.deny == set() with input as facts("nvidia-cdi", false)
	check.skip == set() with input as facts("nvidia", false)
}

test_pass_cdi if {
	check.deny == set() with input as facts("runc", true)
}

test_fail_runc_without_cdi if {
	check.deny == {"containerd (/etc/containerd/config.toml): default runtime is \"runc\" and CDI is not enabled, so containers get no GPU unless they ask for the nvidia runtime"} with input as facts("runc", false)
}

test_skip_no_containerd if {
	check.skip == {"containerd is not configured"} with input as {"target": {"kind": "host"}, "container_runtime": {"cdi_specs": []}}
}

test_fail_points_at_default_runtime_name if {
	located := {"target": {"kind": "image"}, "container_runtime": {"containerd": {
		"config_path": "/etc/containerd/config.toml", "default_runtime": "runc", "cdi_enabled": false,
		"locations": {"default_runtime": {"file": "/etc/containerd/config.toml", "line": 19}},
	}}}
	check.deny == {{
		"msg": "containerd (/etc/containerd/config.toml): default runtime is \"runc\" and CDI is not enabled, so containers get no GPU unless they ask for the nvidia runtime",
		"file": "/etc/containerd/config.toml", "line": 19,
	}} with input as located
}
