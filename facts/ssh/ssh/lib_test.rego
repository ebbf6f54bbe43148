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

# A hardened daemon as the collector records it: loaded from its pid file,
# files unchanged since, and the none probe listing only publickey.
running := {
	"pid": 812, "source": "process", "config_path": "/etc/ssh/sshd_config", "listen": ["127.0.0.1:22"],
	"files": ["/etc/ssh/sshd_config", "/etc/ssh/sshd_config.d/50-cloud.conf"],
	"permit_root_login": "no", "password_authentication": "no", "kbd_interactive_authentication": "no",
	"started_at": "2025-03-01T08:00:00Z", "loaded_at": "2025-03-01T09:00:00Z", "loaded_from": "pid_file",
	"newest_config": "/etc/ssh/sshd_config", "newest_config_modified": "2025-03-01T08:59:00Z",
	"wire": [{"address": "127.0.0.1:22", "source": "wire", "auth_methods": ["publickey"]}],
}

stale := object.union(running, {
	"config_newer": true, "newest_config": "/etc/ssh/sshd_config.d/50-cloud.conf",
	"newest_config_modified": "2025-03-01T10:00:00Z",
})

test_older_fresh_is_empty if {
	lib.older(running) == set()
}

test_older_stale_names_the_newest_file if {
	lib.older(stale) == {{
		"msg": "sshd pid 812 (127.0.0.1:22; /etc/ssh/sshd_config) runs an older configuration than /etc/ssh/sshd_config.d/50-cloud.conf (modified at 2025-03-01T10:00:00Z, after the daemon started at 2025-03-01T09:00:00Z): reload it (systemctl reload ssh)",
		"file": "/etc/ssh/sshd_config.d/50-cloud.conf",
	}}
}

test_older_stale_without_pid_file_says_restart if {
	d := object.union(stale, {"loaded_from": "process_start", "loaded_at": "2025-03-01T08:00:00Z"})
	some f in lib.older(d)
	endswith(f.msg, "reload it (systemctl reload ssh); it has no PidFile naming it, so a reload does not show here and only a restart clears this")
}

test_older_wire_offers_what_the_file_forbids if {
	d := json.patch(running, [{"op": "replace", "path": "/wire/0/auth_methods", "value": ["publickey", "password", "keyboard-interactive"]}])
	lib.older(d) == {
		{
			"msg": "sshd pid 812 (127.0.0.1:22; /etc/ssh/sshd_config) runs an older configuration than /etc/ssh/sshd_config: it offers password on the wire at 127.0.0.1:22, which the file forbids (PasswordAuthentication no): reload it (systemctl reload ssh)",
			"file": "/etc/ssh/sshd_config",
		},
		{
			"msg": "sshd pid 812 (127.0.0.1:22; /etc/ssh/sshd_config) runs an older configuration than /etc/ssh/sshd_config: it offers keyboard-interactive on the wire at 127.0.0.1:22, which the file forbids (KbdInteractiveAuthentication no): reload it (systemctl reload ssh)",
			"file": "/etc/ssh/sshd_config",
		},
	}
}

test_older_wire_password_the_file_allows if {
	d := json.patch(running, [
		{"op": "replace", "path": "/password_authentication", "value": "yes"},
		{"op": "replace", "path": "/wire/0/auth_methods", "value": ["publickey", "password"]},
	])
	lib.older(d) == set()
}

test_older_wire_under_a_match_is_not_judged if {
	d := json.patch(running, [
		{"op": "replace", "path": "/wire/0/auth_methods", "value": ["publickey", "password"]},
		{"op": "add", "path": "/match", "value": [{"file": "/etc/ssh/sshd_config", "line": 9, "criteria": "Address 127.0.0.1", "settings": [
			{"keyword": "passwordauthentication", "value": "yes", "file": "/etc/ssh/sshd_config", "line": 10},
		]}]},
	])
	lib.older(d) == set()
}

test_older_wire_error_is_not_judged if {
	d := json.patch(running, [{"op": "replace", "path": "/wire/0", "value": {"address": "127.0.0.1:22", "source": "wire", "error": "EOF", "auth_methods": ["password"]}}])
	lib.older(d) == set()
}
