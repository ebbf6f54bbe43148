package gpuhost.pin.nvidia_stack_test

import data.gpuhost.pin.nvidia_stack as check

full := {
	"packages": [{"name": "nvidia-container-toolkit", "version": "1.17.8-1"}, {"name": "libnvidia-ml1", "version": "535.261.03-1"}],
	"gpu_driver": {"version": "535.261.03", "cuda_toolkit_version": "12.2"},
}

test_pass_full_stack if {
	check.deny == set() with input as full with data.gpuhost.params as {}
}

test_fail_empty_image_by_default if {
	check.deny == {
		"no NVIDIA driver is installed: no NVML library, driver or kernel module package",
		"no CUDA toolkit is installed: no cuda-toolkit package and no /usr/local/cuda/version.json",
		"the NVIDIA container toolkit is not installed (nvidia-container-toolkit)",
	} with input as {"packages": [], "gpu_driver": {"packages": []}} with data.gpuhost.params as {}
}

test_fail_names_the_missing_part if {
	doc := {"packages": full.packages, "gpu_driver": {"version": "535.261.03"}}
	check.deny == {"no CUDA toolkit is installed: no cuda-toolkit package and no /usr/local/cuda/version.json"} with input as doc with data.gpuhost.params as {"profile": "gpu"}
}

test_skip_cpu_profile if {
	check.deny == set() with input as {"packages": [], "gpu_driver": {}} with data.gpuhost.params as {"profile": "cpu"}
	count(check.skip) == 1 with input as {"packages": [], "gpu_driver": {}} with data.gpuhost.params as {"profile": "cpu"}
}
