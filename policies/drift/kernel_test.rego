package gpuhost.drift.kernel_test

import data.gpuhost.drift.kernel as check

manifest(k) := {"schema": "gpuhost.manifest/v1", "pins": {"kernel": k}}

test_pass_same_kernel if {
	f := {"target": {"kind": "host"}, "manifest": manifest("6.1.0-31-amd64"), "kernel": {"release": "6.1.0-31-amd64", "cmdline": []}}
	check.deny == set() with input as f
	check.skip == set() with input as f
}

test_fail_other_kernel if {
	f := {"target": {"kind": "host"}, "manifest": manifest("6.1.0-31-amd64"), "kernel": {"release": "6.1.0-32-amd64", "cmdline": []}}
	check.deny == {"the running kernel is 6.1.0-32-amd64; the image was baked with 6.1.0-31-amd64"} with input as f
}

test_skip_no_pin if {
	f := {"target": {"kind": "host"}, "manifest": {"schema": "gpuhost.manifest/v1", "pins": {}}, "kernel": {"release": "6.1.0-32-amd64", "cmdline": []}}
	check.skip == {"the baseline pins no kernel"} with input as f
	check.deny == set() with input as f
}

test_skip_release_unknown if {
	f := {"target": {"kind": "host"}, "manifest": manifest("6.1.0-31-amd64"), "kernel": {"cmdline": []}}
	check.skip == {"the running kernel release is unknown"} with input as f
	check.deny == set() with input as f
}
