package gpuhost.pin.held_test

import data.gpuhost.pin.held as check

params := {"pins": {"nvidia-driver": "535.261.03-1", "libnvidia-ml1": "535.261.03-1"}, "require_hold": true}

pkg(name, held) := {"name": name, "version": "535.261.03-1", "arch": "amd64", "held": held}

test_pass_all_held if {
	f := {"target": {"kind": "image"}, "packages": [pkg("nvidia-driver", true), pkg("libnvidia-ml1", true), pkg("bash", false)]}
	check.deny == set() with input as f with data.gpuhost.params as params
	check.skip == set() with input as f with data.gpuhost.params as params
}

test_fail_not_held if {
	f := {"target": {"kind": "host"}, "packages": [pkg("nvidia-driver", false), pkg("libnvidia-ml1", true), pkg("bash", false)]}
	check.deny == {"nvidia-driver:amd64 535.261.03-1 is pinned but not held"} with input as f with data.gpuhost.params as params
}

test_fail_hold_default_true if {
	f := {"target": {"kind": "host"}, "packages": [pkg("libnvidia-ml1", false)]}
	check.deny == {"libnvidia-ml1:amd64 535.261.03-1 is pinned but not held"} with input as f with data.gpuhost.params as {"pins": params.pins}
}

test_skip_hold_not_required if {
	f := {"target": {"kind": "host"}, "packages": [pkg("nvidia-driver", false)]}
	p := {"pins": params.pins, "require_hold": false}
	check.skip == {"params.require_hold is false"} with input as f with data.gpuhost.params as p
	check.deny == set() with input as f with data.gpuhost.params as p
}

test_skip_no_pins if {
	check.skip == {"params.pins is empty: nothing is pinned"} with input as {"target": {"kind": "host"}, "packages": [pkg("nvidia-driver", false)]}
		with data.gpuhost.params as {"pins": {}, "require_hold": true}
}

# A package read from dpkg's status file is pointed at by its paragraph's line.
test_fail_points_at_the_status_line if {
	f := {"target": {"kind": "image"}, "packages": [object.union(pkg("nvidia-driver", false), {"line": 1207})]}
	check.deny == {{
		"msg": "nvidia-driver:amd64 535.261.03-1 is pinned but not held",
		"file": "/var/lib/dpkg/status",
		"line": 1207,
	}} with input as f
		with data.gpuhost.params as params
}
