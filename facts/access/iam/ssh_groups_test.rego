package gpuhost.iam.ssh_groups_test

import data.gpuhost.iam.ssh_fixtures_test as fx
import data.gpuhost.iam.ssh_groups

test_hardened_passes if {
	ssh_groups.deny == set() with input as {"ssh": fx.ssh} with data.gpuhost.params as fx.params
}

test_no_allow_groups_fails if {
	ssh_groups.deny == {"/etc/ssh/sshd_config sets no AllowGroups: any account may log in over ssh (want gpuhost-admin gpuhost-audit gpuhost-dev)"} with input as {"ssh": object.union(fx.ssh, {"allow_groups": []})}
		with data.gpuhost.params as fx.params
}

test_foreign_group_fails if {
	ssh_groups.deny == {"/etc/ssh/sshd_config: AllowGroups admits users, which is not a role group"} with input as {"ssh": object.union(fx.ssh, {"allow_groups": ["gpuhost-admin", "users"]})}
		with data.gpuhost.params as fx.params
}

test_each_running_daemon_is_judged if {
	d := object.union(fx.ssh, {"config_path": "/run/sshd-alt.conf", "allow_groups": []})
	ssh_groups.deny == {"/run/sshd-alt.conf sets no AllowGroups: any account may log in over ssh (want gpuhost-admin gpuhost-audit gpuhost-dev)"} with input as {"ssh": object.union(fx.ssh, {"daemons": [fx.ssh, d]})}
		with data.gpuhost.params as fx.params
}

test_no_roles_skip if {
	ssh_groups.skip == {"params.roles define no group"} with data.gpuhost.params as {}
}
