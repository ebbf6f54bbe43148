package gpuhost.drift.packages_removed_test

import data.gpuhost.drift.packages_removed as check

pkg(name, version) := {"name": name, "version": version, "arch": "amd64", "held": false}

manifest := {"schema": "gpuhost.manifest/v1", "packages": [pkg("bash", "5.2.15-2"), pkg("nvidia-smi", "535.261.03-1")]}

test_pass_all_present if {
	f := {"target": {"kind": "host"}, "manifest": manifest, "packages": [pkg("bash", "5.2.15-2"), pkg("nvidia-smi", "535.261.03-1"), pkg("vim", "9.0-1")]}
	check.deny == set() with input as f
}

test_fail_removed if {
	f := {"target": {"kind": "host"}, "manifest": manifest, "packages": [pkg("bash", "5.2.15-2")]}
	check.deny == {"nvidia-smi:amd64 535.261.03-1 is in the baseline but no longer installed"} with input as f
}
