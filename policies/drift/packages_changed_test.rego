package gpuhost.drift.packages_changed_test

import data.gpuhost.drift.packages_changed as check

pkg(name, version) := {"name": name, "version": version, "arch": "amd64", "held": false}

manifest := {"schema": "gpuhost.manifest/v1", "packages": [pkg("bash", "5.2.15-2"), pkg("nvidia-driver", "535.261.03-1")]}

test_pass_same_versions if {
	f := {"target": {"kind": "host"}, "manifest": manifest, "packages": [pkg("bash", "5.2.15-2"), pkg("nvidia-driver", "535.261.03-1"), pkg("vim", "9.0-1")]}
	check.deny == set() with input as f
}

test_fail_upgraded if {
	f := {"target": {"kind": "rootfs"}, "manifest": manifest, "packages": [pkg("bash", "5.2.15-2"), pkg("nvidia-driver", "550.54.15-1")]}
	check.deny == {"nvidia-driver:amd64 is at 550.54.15-1; the baseline has 535.261.03-1"} with input as f
}

test_other_arch_is_not_a_change if {
	f := {"target": {"kind": "host"}, "manifest": manifest, "packages": [{"name": "bash", "version": "5.1-1", "arch": "i386", "held": false}]}
	check.deny == set() with input as f
}
