package gpuhost.ssh.macs_test

import data.gpuhost.ssh.macs as check

params := {"ssh_weak_macs": ["hmac-md5*", "hmac-sha1*", "umac-64*", "hmac-ripemd160*", "umac-128@openssh.com"]}

facts(macs) := {"target": {"kind": "image"}, "ssh": {"config_path": "/etc/ssh/sshd_config", "macs": macs}}

test_pass_strong if {
	f := facts(["umac-128-etm@openssh.com", "hmac-sha2-256-etm@openssh.com", "hmac-sha2-512-etm@openssh.com", "hmac-sha2-256", "hmac-sha2-512"])
	check.deny == set() with input as f with data.gpuhost.params as params
}

test_fail_weak if {
	f := facts(["hmac-sha2-256", "hmac-sha1", "hmac-sha1-etm@openssh.com", "umac-64@openssh.com", "hmac-md5-96", "UMAC-128@openssh.com"])
	check.deny == {
		"sshd (/etc/ssh/sshd_config) offers weak MAC UMAC-128@openssh.com in its configuration",
		"sshd (/etc/ssh/sshd_config) offers weak MAC hmac-sha1 in its configuration",
		"sshd (/etc/ssh/sshd_config) offers weak MAC hmac-sha1-etm@openssh.com in its configuration",
		"sshd (/etc/ssh/sshd_config) offers weak MAC umac-64@openssh.com in its configuration",
		"sshd (/etc/ssh/sshd_config) offers weak MAC hmac-md5-96 in its configuration",
	} with input as f with data.gpuhost.params as params
}

test_fail_closed_without_params if {
	check.deny == {"parameter ssh_weak_macs is not set"} with input as facts(["hmac-sha1"]) with data.gpuhost.params as {}
}
