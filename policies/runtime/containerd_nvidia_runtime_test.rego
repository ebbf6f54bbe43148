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
	check.deny == {"containerd (/etc/containerd/config.toml) defines no nvidia runtime"} with input as facts(false, "", false, toolkit)
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
