package gpuhost.pkg.required_test

import data.gpuhost.pkg.required

params := {"required_packages": ["sudo", "chrony|ntp"]}

pkgs(names) := [{"name": n, "version": "1", "arch": "amd64", "held": false} | some n in names]

test_pass_with_an_alternative if {
	required.deny == set() with input as {"packages": pkgs(["sudo", "ntp"])} with data.gpuhost.params as params
}

test_fail_missing if {
	required.deny == {
		{"msg": "sudo is not installed (params.required_packages)", "subject": "sudo"},
		{"msg": "chrony or ntp is not installed (params.required_packages)", "subject": "chrony|ntp"},
	} with input as {"packages": pkgs(["cron"])} with data.gpuhost.params as params
}
