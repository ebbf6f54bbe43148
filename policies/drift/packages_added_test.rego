package gpuhost.drift.packages_added_test

import data.gpuhost.drift.packages_added as check

pkg(name, version) := {"name": name, "version": version, "arch": "amd64", "held": false}

manifest := {"schema": "gpuhost.manifest/v1", "packages": [pkg("bash", "5.2.15-2")]}

test_pass_nothing_added if {
	f := {"target": {"kind": "host"}, "manifest": manifest, "packages": [pkg("bash", "5.2.16-1")]}
	check.deny == set() with input as f
}

test_fail_added if {
	f := {"target": {"kind": "host"}, "manifest": manifest, "packages": [pkg("bash", "5.2.15-2"), pkg("netcat-openbsd", "1.219-1")]}
	check.deny == {"netcat-openbsd:amd64 1.219-1 is installed but not in the baseline"} with input as f
}

test_no_manifest_no_finding if {
	check.deny == set() with input as {"target": {"kind": "host"}, "packages": [pkg("bash", "5.2.15-2")]}
}
