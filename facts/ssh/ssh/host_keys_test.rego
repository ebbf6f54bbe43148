package gpuhost.ssh.host_keys_test

import data.gpuhost.ssh.host_keys as check

params := {"ssh_min_rsa_bits": 3072, "ssh_weak_host_key_algorithms": ["ssh-rsa", "ssh-dss"]}

daemon(keys, algs) := {
	"pid": 7, "source": "process", "config_path": "/etc/ssh/sshd_config", "listen": ["127.0.0.1:22"], "host_keys": keys,
	"wire": [{"address": "127.0.0.1:22", "source": "wire", "host_key_algorithms": algs}],
}

test_fail_short_rsa_on_the_wire if {
	d := daemon([{"type": "ssh-rsa", "bits": 2048, "source": "wire", "address": "127.0.0.1:22"}], ["rsa-sha2-512", "ssh-rsa"])
	check.deny == {
		"sshd pid 7 (127.0.0.1:22; /etc/ssh/sshd_config) has an RSA host key of 2048 bits on the wire at 127.0.0.1:22; want at least 3072",
		"sshd pid 7 (127.0.0.1:22; /etc/ssh/sshd_config) offers weak host key algorithm ssh-rsa on the wire at 127.0.0.1:22",
	} with input as {"ssh": {"daemons": [d]}} with data.gpuhost.params as params
}

test_fail_dsa_file if {
	f := {"ssh": {"config_path": "/etc/ssh/sshd_config", "host_keys": [
		{"type": "ssh-dss", "bits": 1024, "source": "file", "file": "/etc/ssh/ssh_host_dsa_key"},
		{"type": "ssh-rsa", "bits": 4096, "source": "file", "file": "/etc/ssh/ssh_host_rsa_key"},
	]}}
	check.deny == {"sshd (/etc/ssh/sshd_config) has a DSA host key in /etc/ssh/ssh_host_dsa_key"} with input as f with data.gpuhost.params as params
}

test_pass_strong if {
	d := daemon([{"type": "ssh-ed25519", "bits": 256, "source": "wire", "address": "127.0.0.1:22"}, {"type": "ssh-rsa", "bits": 3072, "source": "wire", "address": "127.0.0.1:22"}], ["rsa-sha2-512", "ssh-ed25519"])
	check.deny == set() with input as {"ssh": {"daemons": [d]}} with data.gpuhost.params as params
}

test_fail_closed_without_params if {
	check.deny == {"parameter ssh_min_rsa_bits is not set", "parameter ssh_weak_host_key_algorithms is not set"} with input as {"ssh": {"config_path": "/x"}} with data.gpuhost.params as {}
}
