package gpuhost.pin.container_toolkit_held_test

import data.gpuhost.pin.container_toolkit_held as check

pkg(name, held) := {"name": name, "version": "1.17.8-1", "arch": "amd64", "held": held}

test_pass_all_four_held if {
	f := {"target": {"kind": "image"}, "packages": [
		pkg("nvidia-container-toolkit", true),
		pkg("nvidia-container-toolkit-base", true),
		pkg("libnvidia-container-tools", true),
		pkg("libnvidia-container1", true),
		pkg("containerd", false),
	]}
	check.deny == set() with input as f
	check.skip == set() with input as f
}

test_fail_three_held_one_not if {
	check.deny == {"libnvidia-container1:amd64 1.17.8-1 is installed but not held"} with input as {"target": {"kind": "image"}, "packages": [
		pkg("nvidia-container-toolkit", true),
		pkg("nvidia-container-toolkit-base", true),
		pkg("libnvidia-container-tools", true),
		pkg("libnvidia-container1", false),
	]}
}

test_fail_partial_install if {
	check.deny == {
		"libnvidia-container-tools is not installed while nvidia-container-toolkit, nvidia-container-toolkit-base are; the four toolkit packages must be installed together",
		"libnvidia-container1 is not installed while nvidia-container-toolkit, nvidia-container-toolkit-base are; the four toolkit packages must be installed together",
	} with input as {"target": {"kind": "host"}, "packages": [
		pkg("nvidia-container-toolkit", true),
		pkg("nvidia-container-toolkit-base", true),
	]}
}

test_skip_not_installed if {
	f := {"target": {"kind": "host"}, "packages": [pkg("containerd", false)]}
	check.skip == {"the NVIDIA container toolkit is not installed"} with input as f
	check.deny == set() with input as f
	check.skip == {"the NVIDIA container toolkit is not installed"} with input as {"target": {"kind": "host"}}
}
