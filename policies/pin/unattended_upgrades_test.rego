package gpuhost.pin.unattended_upgrades_test

import data.gpuhost.pin.unattended_upgrades as check

params := {"pins": {"nvidia-driver": "535.261.03-1"}}

uu := {"name": "unattended-upgrades", "version": "2.9.1+nmu3", "arch": "all", "held": false}

facts(packages, masked) := {"target": {"kind": "image"}, "packages": packages, "systemd": {"enabled": [], "masked": masked}}

test_pass_masked if {
	f := facts([uu], ["unattended-upgrades.service"])
	check.deny == set() with input as f with data.gpuhost.params as params
	check.skip == set() with input as f with data.gpuhost.params as params
}

test_pass_not_installed if {
	check.deny == set() with input as facts([], []) with data.gpuhost.params as params
}

test_fail_active if {
	check.deny == {"unattended-upgrades is installed and unattended-upgrades.service is not masked while 1 packages are pinned"} with input as facts([uu], ["apt-daily.timer"])
		with data.gpuhost.params as params
	check.deny == {"unattended-upgrades is installed and unattended-upgrades.service is not masked while 1 packages are pinned"} with input as {"target": {"kind": "host"}, "packages": [uu]}
		with data.gpuhost.params as params
}

test_skip_no_pins if {
	f := facts([uu], [])
	check.skip == {"params.pins is empty: nothing is pinned"} with input as f with data.gpuhost.params as {"pins": {}}
	check.deny == set() with input as f with data.gpuhost.params as {"pins": {}}
}

test_fail_points_at_the_status_line if {
	f := facts([object.union(uu, {"line": 412})], [])
	check.deny == {{
		"msg": "unattended-upgrades is installed and unattended-upgrades.service is not masked while 1 packages are pinned",
		"file": "/var/lib/dpkg/status",
		"line": 412,
	}} with input as f
		with data.gpuhost.params as params
}
