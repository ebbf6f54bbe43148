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

stale_msg := "sshd pid 812 (127.0.0.1:22; /etc/ssh/sshd_config) runs an older configuration than /etc/ssh/sshd_config (modified at 2025-03-01T10:00:00Z, after the daemon started at 2025-03-01T09:00:00Z): reload it (systemctl reload ssh)"

aged(d, config_newer) := object.union(d, {
	"password_authentication": "no", "kbd_interactive_authentication": "no",
	"loaded_at": "2025-03-01T09:00:00Z", "loaded_from": "pid_file", "config_newer": config_newer,
	"newest_config": "/etc/ssh/sshd_config", "newest_config_modified": "2025-03-01T10:00:00Z",
})

test_fail_stale if {
	f := {"ssh": {"daemons": [aged(daemon(["aes256-ctr"], ["aes256-ctr"], ["ciphers"]), true)]}}
	check.deny == {{"msg": stale_msg, "file": "/etc/ssh/sshd_config"}} with input as f
}

test_fail_stale_even_without_the_kexinit if {
	d := object.union(aged(daemon(["a"], ["b"], ["ciphers"]), true), {"wire": [{"address": "127.0.0.1:22", "source": "wire", "error": "EOF"}]})
	check.skip == set() with input as {"ssh": {"daemons": [d]}}
	check.deny == {{"msg": stale_msg, "file": "/etc/ssh/sshd_config"}} with input as {"ssh": {"daemons": [d]}}
}

test_fail_wire_offers_password_the_file_forbids if {
	d := json.patch(aged(daemon(["aes256-ctr"], ["aes256-ctr"], ["ciphers"]), false), [{"op": "add", "path": "/wire/0/auth_methods", "value": ["publickey", "password"]}])
	check.deny == {{
		"msg": "sshd pid 812 (127.0.0.1:22; /etc/ssh/sshd_config) runs an older configuration than /etc/ssh/sshd_config: it offers password on the wire at 127.0.0.1:22, which the file forbids (PasswordAuthentication no): reload it (systemctl reload ssh)",
		"file": "/etc/ssh/sshd_config",
	}} with input as {"ssh": {"daemons": [d]}}
}

test_pass_fresh if {
	d := json.patch(aged(daemon(["aes256-ctr"], ["aes256-ctr"], ["ciphers"]), false), [{"op": "add", "path": "/wire/0/auth_methods", "value": ["publickey"]}])
	check.deny == set() with input as {"ssh": {"daemons": [d]}}
	check.skip == set() with input as {"ssh": {"daemons": [d]}}
}
