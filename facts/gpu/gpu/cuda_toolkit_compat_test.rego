package gpuhost.gpu.cuda_toolkit_compat_test

import data.gpuhost.gpu.cuda_toolkit_compat as check

image(toolkit, branch, max_cuda) := {"gpu_driver": {
	"packages": [], "modules": {}, "nouveau_blacklisted": true, "persistenced_enabled": true, "fabricmanager_enabled": false,
	"cuda_toolkit_version": toolkit, "cuda_toolkit_source": "cuda-toolkit-12-4", "branch": branch, "max_cuda": max_cuda,
}}

test_pass if {
	check.deny == set() with input as image("12.2", 535, "12.2")
	check.deny == set() with input as image("11.8", 535, "12.2")
	check.skip == set() with input as image("12.2", 535, "12.2")
}

test_fail_newer if {
	check.deny == {"CUDA toolkit 12.4 (cuda-toolkit-12-4) needs a newer driver: branch 535 supports CUDA up to 12.2"} with input as image("12.4", 535, "12.2")
}

test_fail_two_digit_minor if {
	count(check.deny) == 1 with input as image("12.10", 575, "12.9")
}

test_skip if {
	check.skip == {"no CUDA toolkit is installed"} with input as image("", 535, "12.2")
	check.skip == {"no NVIDIA driver package is installed"} with input as image("12.2", 0, "")
	check.skip == {"driver branch 590 is not in the compatibility matrix"} with input as image("13.1", 590, "")
}
