package gpuhost.ssh.ciphers_test

import data.gpuhost.ssh.ciphers as check

params := {"ssh_weak_ciphers": ["3des-cbc", "aes128-cbc", "aes256-cbc", "arcfour*", "rijndael-cbc@lysator.liu.se"]}

facts(ciphers) := {"target": {"kind": "rootfs"}, "ssh": {"config_path": "/etc/ssh/sshd_config", "ciphers": ciphers}}

test_pass_strong if {
	f := facts(["chacha20-poly1305@openssh.com", "aes256-gcm@openssh.com", "aes128-gcm@openssh.com", "aes256-ctr", "aes192-ctr", "aes128-ctr"])
	check.deny == set() with input as f with data.gpuhost.params as params
}

test_fail_weak if {
	f := facts(["aes256-ctr", "aes128-cbc", "arcfour256", "ARCFOUR", "rijndael-cbc@lysator.liu.se"])
	check.deny == {
		"sshd (/etc/ssh/sshd_config) offers weak cipher aes128-cbc in its configuration",
		"sshd (/etc/ssh/sshd_config) offers weak cipher arcfour256 in its configuration",
		"sshd (/etc/ssh/sshd_config) offers weak cipher ARCFOUR in its configuration",
		"sshd (/etc/ssh/sshd_config) offers weak cipher rijndael-cbc@lysator.liu.se in its configuration",
	} with input as f with data.gpuhost.params as params
}

test_fail_weak_at_the_ciphers_line if {
	f := object.union(facts(["aes128-cbc"]), {"ssh": {"locations": {"ciphers": {"file": "/etc/ssh/sshd_config", "line": 12}}}})
	check.deny == {{
		"msg": "sshd (/etc/ssh/sshd_config) offers weak cipher aes128-cbc in its configuration",
		"file": "/etc/ssh/sshd_config", "line": 12,
	}} with input as f with data.gpuhost.params as params
}

test_fail_closed_without_params if {
	check.deny == {"parameter ssh_weak_ciphers is not set"} with input as facts(["aes128-cbc"]) with data.gpuhost.params as {}
}

test_fail_on_the_wire_not_the_file if {
	d := {
		"pid": 812, "source": "process", "config_path": "/etc/ssh/sshd_config", "listen": ["0.0.0.0:22"],
		"ciphers": ["aes256-gcm@openssh.com"],
		"wire": [{"address": "0.0.0.0:22", "source": "wire", "ciphers": ["aes256-gcm@openssh.com", "3des-cbc"]}],
	}
	check.deny == {"sshd pid 812 (0.0.0.0:22; /etc/ssh/sshd_config) offers weak cipher 3des-cbc on the wire at 0.0.0.0:22"} with input as {"ssh": {"daemons": [d]}} with data.gpuhost.params as params
}
