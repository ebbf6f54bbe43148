package gpuhost.gpu.persistenced_enabled_test

import data.gpuhost.gpu.persistenced_enabled as check

image(pkgs, enabled) := {"gpu_driver": {"packages": pkgs, "modules": {}, "nouveau_blacklisted": true, "persistenced_enabled": enabled, "fabricmanager_enabled": false}}

driver := [{"name": "nvidia-driver", "version": "535.261.03-1", "arch": "amd64", "held": true}]

test_pass if {
	check.deny == set() with input as image(driver, true)
}

test_fail if {
	check.deny == {"the NVIDIA driver is installed but nvidia-persistenced.service is not enabled"} with input as image(driver, false)
}

test_skip_no_driver if {
	check.skip == {"no NVIDIA driver package is installed"} with input as image([], false)
}
