package gpuhost.ssh.discouraged_algorithms_test

import data.gpuhost.ssh.discouraged_algorithms as check

params := {
	"ssh_discouraged_kex": ["ecdh-sha2-nistp*"],
	"ssh_discouraged_host_key_algorithms": ["ecdsa-sha2-nistp*"],
	"ssh_discouraged_macs": ["hmac-sha2-256"],
}

live := {"ssh": {"daemons": [{
	"pid": 7, "source": "process", "config_path": "/etc/ssh/sshd_config", "listen": ["127.0.0.1:22"],
	"wire": [{
		"address": "127.0.0.1:22", "source": "wire",
		"kex_algorithms": ["curve25519-sha256", "ecdh-sha2-nistp256"], "host_key_algorithms": ["ssh-ed25519", "ecdsa-sha2-nistp256"],
		"ciphers": ["aes256-gcm@openssh.com"], "macs": ["hmac-sha2-512-etm@openssh.com", "hmac-sha2-256"],
	}],
}]}}

test_fail_on_the_wire if {
	check.deny == {
		"sshd pid 7 (127.0.0.1:22; /etc/ssh/sshd_config) offers discouraged key exchange ecdh-sha2-nistp256 on the wire at 127.0.0.1:22",
		"sshd pid 7 (127.0.0.1:22; /etc/ssh/sshd_config) offers discouraged MAC hmac-sha2-256 on the wire at 127.0.0.1:22",
		"sshd pid 7 (127.0.0.1:22; /etc/ssh/sshd_config) offers discouraged host key algorithm ecdsa-sha2-nistp256 on the wire at 127.0.0.1:22",
	} with input as live with data.gpuhost.params as params
}

test_fail_image_host_key_file if {
	f := {"ssh": {"config_path": "/etc/ssh/sshd_config", "kex_algorithms": ["curve25519-sha256"], "macs": [], "host_keys": [
		{"type": "ecdsa-sha2-nistp256", "bits": 256, "source": "file", "file": "/etc/ssh/ssh_host_ecdsa_key"},
		{"type": "ssh-ed25519", "bits": 256, "source": "file", "file": "/etc/ssh/ssh_host_ed25519_key"},
	]}}
	check.deny == {"sshd (/etc/ssh/sshd_config) offers discouraged host key algorithm ecdsa-sha2-nistp256 in host key /etc/ssh/ssh_host_ecdsa_key"} with input as f with data.gpuhost.params as params
}

test_pass_hardened if {
	f := {"ssh": {"config_path": "/etc/ssh/sshd_config", "kex_algorithms": ["sntrup761x25519-sha512@openssh.com"], "macs": ["hmac-sha2-512-etm@openssh.com"]}}
	check.deny == set() with input as f with data.gpuhost.params as params
}

test_fail_closed_without_params if {
	check.deny == {
		"parameter ssh_discouraged_kex is not set",
		"parameter ssh_discouraged_macs is not set",
		"parameter ssh_discouraged_host_key_algorithms is not set",
	} with input as {"ssh": {"config_path": "/x"}} with data.gpuhost.params as {}
}

test_host_key_never_presented_passes if {
	f := {"ssh": {"config_path": "/etc/ssh/sshd_config", "kex_algorithms": ["curve25519-sha256"], "macs": [], "host_key_algorithms": ["ssh-ed25519", "rsa-sha2-512"], "host_keys": [
		{"type": "ecdsa-sha2-nistp256", "bits": 256, "source": "file", "file": "/etc/ssh/ssh_host_ecdsa_key"},
		{"type": "ssh-rsa", "bits": 3072, "source": "file", "file": "/etc/ssh/ssh_host_rsa_key"},
	]}}
	check.deny == set() with input as f with data.gpuhost.params as params
}
