package gpuhost.runtime.containerd_nvidia_runtime_test

import data.gpuhost.runtime.containerd_nvidia_runtime as check

toolkit := [{"name": "nvidia-container-toolkit", "version": "1.17.8-1"}, {"name": "nvidia-container-toolkit-base", "version": "1.17.8-1"}]

facts(nvidia, binary, present, packages) := {"target": {"kind": "image"}, "packages": packages, "container_runtime": {
	"containerd": {
		"config_path": "/etc/containerd/config.toml",
		"nvidia_runtime": nvidia,
		"nvidia_binary": binary,
		"nvidia_binary_present": present,
		"default_runtime": "runc",
	},
	"cdi_specs": [],
}}

working := facts(true, "/usr/bin/nvidia-container-runtime", true, toolkit)

test_pass_nvidia if {
	check.deny == set() with input as working
	check.skip == set() with input as working
}

test_fail_no_nvidia if {
	check.deny == {{"msg": "containerd (/etc/containerd/config.toml) defines no nvidia runtime", "file": "/etc/containerd/config.toml"}} with input as facts(false, "", false, toolkit)
}

test_fail_binary_missing if {
	check.deny == {"containerd (/etc/containerd/config.toml) runs the nvidia runtime from /usr/bin/nvidia-container-runtime, which is not an executable file in the target"} with input as facts(true, "/usr/bin/nvidia-container-runtime", false, toolkit)
}

test_fail_no_binary_name if {
	check.deny == {"containerd (/etc/containerd/config.toml) defines an nvidia runtime with no BinaryName, so it runs plain runc"} with input as facts(true, "", false, toolkit)
}

test_fail_toolkit_not_installed if {
	check.deny == {"containerd (/etc/containerd/config.toml) defines an nvidia runtime but the container toolkit is not installed: nvidia-container-toolkit-base missing"} with input as facts(true, "/usr/bin/nvidia-container-runtime", true, [toolkit[0]])
}

test_skip_no_containerd if {
	f := {"target": {"kind": "image"}, "container_runtime": {"cdi_specs": []}}
	check.skip == {"containerd is not configured"} with input as f
	check.deny == set() with input as f
}

# With the lines known, a missing binary points at the BinaryName line, the
# missing toolkit at the runtime's table.
test_fail_points_at_the_setting if {
	located := json.patch(facts(true, "/usr/bin/nvidia-container-runtime", false, []), [{
		"op": "add", "path": "/container_runtime/containerd/locations",
		"value": {
			"nvidia_runtime": {"file": "/etc/containerd/conf.d/99-nvidia.toml", "line": 12},
			"nvidia_binary": {"file": "/etc/containerd/conf.d/99-nvidia.toml", "line": 17},
		},
	}])
	check.deny == {
		{
			"msg": "containerd (/etc/containerd/config.toml) runs the nvidia runtime from /usr/bin/nvidia-container-runtime, which is not an executable file in the target",
			"file": "/etc/containerd/conf.d/99-nvidia.toml", "line": 17,
		},
		{
			"msg": "containerd (/etc/containerd/config.toml) defines an nvidia runtime but the container toolkit is not installed: nvidia-container-toolkit, nvidia-container-toolkit-base missing",
			"file": "/etc/containerd/conf.d/99-nvidia.toml", "line": 12,
		},
	} with input as located
}
