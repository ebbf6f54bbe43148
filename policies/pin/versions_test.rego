package gpuhost.pin.versions_test

import data.gpuhost.pin.versions as check

params := {"pins": {"nvidia-driver": "535.261.03-1", "libnvidia-ml1": "535.261.03-1", "dcgm": "1:4.5.3-1"}}

pkg(name, version, arch) := {"name": name, "version": version, "arch": arch, "held": true}

test_pass_all_pinned if {
	f := {"target": {"kind": "image"}, "packages": [
		pkg("nvidia-driver", "535.261.03-1", "amd64"),
		pkg("libnvidia-ml1", "535.261.03-1", "amd64"),
		pkg("libnvidia-ml1", "535.261.03-1", "i386"),
		pkg("dcgm", "1:4.5.3-1", "amd64"),
		pkg("bash", "5.2.15-2+b7", "amd64"),
	]}
	check.deny == set() with input as f with data.gpuhost.params as params
	check.skip == set() with input as f with data.gpuhost.params as params
}

test_fail_drift_and_missing if {
	f := {"target": {"kind": "host"}, "packages": [
		pkg("nvidia-driver", "535.261.03-1", "amd64"),
		pkg("libnvidia-ml1", "535.261.03-1", "amd64"),
		pkg("libnvidia-ml1", "535.247.01-1", "i386"),
		pkg("dcgm", "4.5.3-1", "amd64"),
	]}
	check.deny == {
		"libnvidia-ml1:i386 is installed at 535.247.01-1; pinned to 535.261.03-1",
		"dcgm:amd64 is installed at 4.5.3-1; pinned to 1:4.5.3-1",
	} with input as f with data.gpuhost.params as params
}

test_fail_nothing_installed if {
	check.deny == {
		"pinned package nvidia-driver (want 535.261.03-1) is not installed",
		"pinned package libnvidia-ml1 (want 535.261.03-1) is not installed",
		"pinned package dcgm (want 1:4.5.3-1) is not installed",
	} with input as {"target": {"kind": "rootfs"}} with data.gpuhost.params as params
}

test_fail_no_pins_on_a_gpu_image if {
	f := {"target": {"kind": "image"}, "packages": [pkg("bash", "5.2.15-2+b7", "amd64")]}
	want := {"params.pins is empty: a GPU image must pin its driver, CUDA and container toolkit versions"}
	check.deny == want with input as f with data.gpuhost.params as {"pins": {}}
	check.deny == want with input as f with data.gpuhost.params as {}
	check.skip == set() with input as f with data.gpuhost.params as {}
}

test_skip_no_pins_cpu_profile if {
	f := {"target": {"kind": "image"}, "packages": [pkg("bash", "5.2.15-2+b7", "amd64")]}
	check.skip == {"params.pins is empty and params.profile is cpu: nothing is pinned"} with input as f with data.gpuhost.params as {"profile": "cpu"}
	check.deny == set() with input as f with data.gpuhost.params as {"profile": "cpu"}
}
