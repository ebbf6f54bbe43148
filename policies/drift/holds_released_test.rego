package gpuhost.drift.holds_released_test

import data.gpuhost.drift.holds_released as check

pkg(name, version, held) := {"name": name, "version": version, "arch": "amd64", "held": held}

manifest := {
	"schema": "gpuhost.manifest/v1",
	"pins": {"packages": [{"name": "nvidia-driver", "version": "535.261.03-1"}, {"name": "nvidia-container-toolkit"}]},
	"packages": [pkg("nvidia-driver", "535.261.03-1", true), pkg("libnvidia-ml1", "535.261.03-1", true), pkg("bash", "5.2.15-2", false)],
}

test_pass_all_held if {
	f := {"target": {"kind": "host"}, "manifest": manifest, "packages": [
		pkg("nvidia-driver", "535.261.03-1", true), pkg("libnvidia-ml1", "535.261.03-1", true),
		pkg("nvidia-container-toolkit", "1.17.8-1", true), pkg("bash", "5.2.15-2", false),
	]}
	check.deny == set() with input as f
}

test_fail_released_and_upgraded if {
	f := {"target": {"kind": "host"}, "manifest": manifest, "packages": [
		pkg("nvidia-driver", "535.261.03-1", true), pkg("libnvidia-ml1", "550.54.15-1", false),
		pkg("nvidia-container-toolkit", "1.17.8-1", true),
	]}
	check.deny == {"libnvidia-ml1:amd64 was held at 535.261.03-1 in the baseline; now installed at libnvidia-ml1:amd64 550.54.15-1 but not held"} with input as f
}

test_fail_removed_and_pin_not_held if {
	f := {"target": {"kind": "rootfs"}, "manifest": manifest, "packages": [
		pkg("libnvidia-ml1", "535.261.03-1", true),
		pkg("nvidia-container-toolkit", "1.18.0-1", false),
	]}
	check.deny == {
		"nvidia-driver:amd64 was held at 535.261.03-1 in the baseline; now no longer installed",
		"nvidia-container-toolkit is pinned at any version in the baseline; now installed at nvidia-container-toolkit:amd64 1.18.0-1 but not held",
	} with input as f
}
