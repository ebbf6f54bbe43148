package gpuhost.ssh.wire_drift_test

import data.gpuhost.ssh.wire_drift as check

daemon(file_ciphers, wire_ciphers, explicit) := {
	"pid": 812, "source": "process", "config_path": "/etc/ssh/sshd_config", "listen": ["127.0.0.1:22"],
	"ciphers": file_ciphers, "kex_algorithms": ["curve25519-sha256"], "macs": ["hmac-sha2-512-etm@openssh.com"],
	"explicit": explicit,
	"wire": [{
		"address": "127.0.0.1:22", "source": "wire", "ciphers": wire_ciphers,
		"kex_algorithms": ["curve25519-sha256", "ecdh-sha2-nistp256"], "macs": ["hmac-sha2-512-etm@openssh.com"],
	}],
}

test_pass_same if {
	f := {"ssh": {"daemons": [daemon(["aes256-ctr", "aes128-ctr"], ["aes128-ctr", "aes256-ctr"], ["ciphers"])]}}
	check.deny == set() with input as f
	check.skip == set() with input as f
}

test_fail_edited_without_reload if {
	f := {"ssh": {"daemons": [daemon(["aes256-ctr"], ["aes256-ctr", "aes128-cbc"], ["ciphers", "kexalgorithms"])]}}
	check.deny == {
		"sshd pid 812 (127.0.0.1:22; /etc/ssh/sshd_config): Ciphers in /etc/ssh/sshd_config differ from what it offers on the wire at 127.0.0.1:22: only in the file [], only on the wire [aes128-cbc]; reload it or restore the file",
		"sshd pid 812 (127.0.0.1:22; /etc/ssh/sshd_config): KexAlgorithms in /etc/ssh/sshd_config differ from what it offers on the wire at 127.0.0.1:22: only in the file [], only on the wire [ecdh-sha2-nistp256]; reload it or restore the file",
	} with input as f
}

test_unset_keyword_not_compared if {
	check.deny == set() with input as {"ssh": {"daemons": [daemon(["aes256-ctr"], ["aes128-ctr"], [])]}}
}

test_skip_without_wire if {
	check.skip == {"no running sshd was read on the wire"} with input as {"ssh": {"config_path": "/etc/ssh/sshd_config", "ciphers": ["aes256-ctr"]}}
	d := object.union(daemon(["a"], ["b"], ["ciphers"]), {"wire": [{"address": "127.0.0.1:22", "source": "wire", "error": "EOF"}]})
	check.skip == {"no running sshd was read on the wire"} with input as {"ssh": {"daemons": [d]}}
	check.deny == set() with input as {"ssh": {"daemons": [d]}}
}
