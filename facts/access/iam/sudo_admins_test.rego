package gpuhost.iam.sudo_admins_test

import data.gpuhost.iam.fixtures_test as fx
import data.gpuhost.iam.sudo_admins

test_good_passes if {
	sudo_admins.deny == set() with input as {"access": fx.good} with data.gpuhost.params as fx.params
}

test_all_outside_admin_fails if {
	s := fx.sudo([fx.rule(["%sudo"], ["ALL"], false), fx.rule(["alice"], ["ALL"], true), fx.rule(["dev"], ["ALL"], false)], [])
	sudo_admins.deny == {
		{"msg": "/etc/sudoers:10 lets %sudo run any command as ALL, and %sudo is not in an admin group (gpuhost-admin)", "subject": "%sudo", "file": "/etc/sudoers", "line": 10},
		{"msg": "/etc/sudoers:10 lets dev run any command as ALL, and dev is not in an admin group (gpuhost-admin)", "subject": "dev", "file": "/etc/sudoers", "line": 10},
	} with input as {"access": object.union(fx.good, {"sudo": s})} with data.gpuhost.params as fx.params
}

test_developer_nopasswd_command_fails if {
	s := fx.sudo([fx.rule(["%gpuhost-dev"], ["/usr/bin/nvidia-smi"], true)], [])
	sudo_admins.deny == {{"msg": "/etc/sudoers:10 lets %gpuhost-dev run /usr/bin/nvidia-smi as root without a password", "subject": "%gpuhost-dev", "file": "/etc/sudoers", "line": 10}} with input as {"access": object.union(fx.good, {"sudo": s})}
		with data.gpuhost.params as fx.params
}

test_primary_group_counts_as_membership if {
	# dev's primary group is gpuhost-dev (1101).
	s := fx.sudo([fx.rule(["dev"], ["/usr/bin/nvidia-smi"], true)], [])
	count(sudo_admins.deny) == 1 with input as {"access": object.union(fx.good, {"sudo": s})} with data.gpuhost.params as fx.params
}

test_no_sudo_skips if {
	a := object.remove(fx.good, ["sudo"])
	sudo_admins.skip == {"sudo is not installed (no /etc/sudoers)"} with input as {"access": a}
}
