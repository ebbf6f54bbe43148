package gpuhost.gpu.nouveau_blacklisted_test

import data.gpuhost.gpu.nouveau_blacklisted as check

image(pkgs, blacklisted) := {"gpu_driver": {"packages": pkgs, "modules": {}, "nouveau_blacklisted": blacklisted, "persistenced_enabled": true, "fabricmanager_enabled": false}}

driver := [{"name": "nvidia-driver", "version": "535.261.03-1", "arch": "amd64", "held": true}]

test_pass if {
	check.deny == set() with input as image(driver, true)
}

test_fail if {
	count(check.deny) == 1 with input as image(driver, false)
}

test_skip_no_driver if {
	check.skip == {"no NVIDIA driver package is installed"} with input as image([], false)
	check.deny == set() with input as image([], false)
}
