package gpuhost.ssh.image_host_keys_test

import data.gpuhost.ssh.image_host_keys as check

facts(keys) := {"target": {"kind": "image"}, "ssh": {"config_path": "/etc/ssh/sshd_config", "host_private_key_files": keys}}

test_pass_no_keys if {
	check.deny == set() with input as facts([])
}

test_pass_field_absent if {
	check.deny == set() with input as {"target": {"kind": "rootfs"}, "ssh": {"config_path": "/etc/ssh/sshd_config"}}
}

test_fail_each_key if {
	check.deny == {
		{
			"msg": "the image carries the SSH host private key /etc/ssh/ssh_host_ed25519_key, which every host booted from it would share",
			"file": "/etc/ssh/ssh_host_ed25519_key", "subject": "/etc/ssh/ssh_host_ed25519_key",
		},
		{
			"msg": "the image carries the SSH host private key /etc/ssh/ssh_host_rsa_key, which every host booted from it would share",
			"file": "/etc/ssh/ssh_host_rsa_key", "subject": "/etc/ssh/ssh_host_rsa_key",
		},
	} with input as facts(["/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_rsa_key"])
}
