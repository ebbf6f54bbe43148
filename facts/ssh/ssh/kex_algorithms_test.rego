package gpuhost.ssh.kex_algorithms_test

import data.gpuhost.ssh.kex_algorithms as check

params := {"ssh_weak_kex": ["diffie-hellman-group1-sha1", "diffie-hellman-group14-sha1", "diffie-hellman-group-exchange-sha1", "gss-group14-sha1-*"]}

facts(kex) := {"target": {"kind": "host"}, "ssh": {"config_path": "/etc/ssh/sshd_config", "kex_algorithms": kex}}

test_pass_strong if {
	f := facts(["sntrup761x25519-sha512@openssh.com", "curve25519-sha256", "curve25519-sha256@libssh.org", "diffie-hellman-group14-sha256", "diffie-hellman-group-exchange-sha256"])
	check.deny == set() with input as f with data.gpuhost.params as params
}

test_fail_weak if {
	f := facts(["curve25519-sha256", "diffie-hellman-group14-sha1", "diffie-hellman-group-exchange-sha1", "gss-group14-sha1-toWM5Slw5Ew8Mqkay+al2g=="])
	check.deny == {
		"sshd (/etc/ssh/sshd_config) offers weak key exchange algorithm diffie-hellman-group14-sha1 in its configuration",
		"sshd (/etc/ssh/sshd_config) offers weak key exchange algorithm diffie-hellman-group-exchange-sha1 in its configuration",
		"sshd (/etc/ssh/sshd_config) offers weak key exchange algorithm gss-group14-sha1-toWM5Slw5Ew8Mqkay+al2g== in its configuration",
	} with input as f with data.gpuhost.params as params
}

test_fail_closed_without_params if {
	check.deny == {"parameter ssh_weak_kex is not set"} with input as facts(["curve25519-sha256"]) with data.gpuhost.params as {}
}
