package gpuhost.ssh.lib_test

import data.gpuhost.ssh.lib

daemon := {
	"pid": 812, "source": "process", "config_path": "/etc/ssh/sshd_config", "listen": ["0.0.0.0:22", ":::22"],
	"ciphers": ["aes128-cbc"],
	"wire": [
		{"address": "0.0.0.0:22", "source": "wire", "ciphers": ["aes256-ctr"]},
		{"address": ":::22", "source": "wire", "error": "reading KEXINIT from [::1]:22: EOF"},
	],
	"match": [{"file": "/etc/ssh/sshd_config", "line": 9, "criteria": "User x", "settings": [
		{"keyword": "passwordauthentication", "value": "yes", "file": "/etc/ssh/sshd_config.d/x.conf", "line": 2},
	]}],
}

test_daemons_fall_back_to_the_top_level if {
	lib.daemons == [{"config_path": "/etc/ssh/sshd_config"}] with input as {"ssh": {"config_path": "/etc/ssh/sshd_config"}}
	lib.daemons == [{"config_path": "/etc/ssh/sshd_config", "daemons": []}] with input as {"ssh": {"config_path": "/etc/ssh/sshd_config", "daemons": []}}
	lib.daemons == [daemon] with input as {"ssh": {"config_path": "/etc/ssh/sshd_config", "daemons": [daemon]}}
}

test_name if {
	lib.name(daemon) == "sshd pid 812 (0.0.0.0:22, :::22; /etc/ssh/sshd_config)"
	lib.name({"config_path": "/x"}) == "sshd (/x)"
}

test_matches if {
	lib.matches("ARCFOUR256", ["arcfour*"])
	lib.matches("aes128-cbc", ["AES128-CBC"])
	not lib.matches("aes128-ctr", ["aes128-cbc", "arcfour*"])
}

test_offered_prefers_the_wire if {
	lib.offered(daemon, "ciphers") == {{"name": "aes256-ctr", "where": "on the wire at 0.0.0.0:22"}}
	lib.offered(object.remove(daemon, ["wire"]), "ciphers") == {{"name": "aes128-cbc", "where": "in its configuration"}}
}

test_match_settings if {
	lib.match_settings(daemon, "passwordauthentication") == {{"block": "Match User x (/etc/ssh/sshd_config:9)", "value": "yes", "at": "/etc/ssh/sshd_config.d/x.conf:2", "file": "/etc/ssh/sshd_config.d/x.conf", "line": 2}}
	lib.match_settings(daemon, "permitrootlogin") == set()
}
