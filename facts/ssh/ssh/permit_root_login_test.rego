package gpuhost.ssh.permit_root_login_test

import data.gpuhost.ssh.permit_root_login as check

facts(v, explicit) := {"target": {"kind": "rootfs"}, "ssh": {"config_path": "/etc/ssh/sshd_config", "permit_root_login": v, "explicit": explicit}}

test_pass_no if {
	check.deny == set() with input as facts("no", ["permitrootlogin"])
	check.deny == set() with input as facts("No", ["permitrootlogin"])
}

test_fail_yes if {
	check.deny == {"sshd (/etc/ssh/sshd_config): PermitRootLogin is yes (set in /etc/ssh/sshd_config): root may log in with a password; want no"} with input as facts("yes", ["permitrootlogin"])
}

test_fail_yes_at_its_line if {
	f := object.union(facts("yes", ["permitrootlogin"]), {"ssh": {"locations": {"permitrootlogin": {"file": "/etc/ssh/sshd_config.d/10-root.conf", "line": 3}}}})
	check.deny == {{
		"msg": "sshd (/etc/ssh/sshd_config): PermitRootLogin is yes (set in /etc/ssh/sshd_config): root may log in with a password; want no",
		"file": "/etc/ssh/sshd_config.d/10-root.conf", "line": 3,
	}} with input as f
}

test_fail_prohibit_password_default if {
	check.deny == {"sshd (/etc/ssh/sshd_config): PermitRootLogin is prohibit-password (OpenSSH default): root may still log in with a key; want no"} with input as facts("prohibit-password", [])
}

test_fail_without_password if {
	check.deny == {"sshd (/etc/ssh/sshd_config): PermitRootLogin is without-password (set in /etc/ssh/sshd_config): root may still log in with a key; want no"} with input as facts("without-password", ["permitrootlogin"])
}

test_fail_unknown_value if {
	check.deny == {"sshd (/etc/ssh/sshd_config): PermitRootLogin is maybe (set in /etc/ssh/sshd_config): an unrecognised value; want no"} with input as facts("maybe", ["permitrootlogin"])
}

test_fail_match if {
	d := {"pid": 5, "listen": ["127.0.0.1:2222"], "config_path": "/x", "permit_root_login": "no", "explicit": ["permitrootlogin"], "match": [{
		"file": "/x", "line": 3, "criteria": "Group admins",
		"settings": [
			{"keyword": "permitrootlogin", "value": "yes", "file": "/x", "line": 4},
			{"keyword": "permitrootlogin", "value": "no", "file": "/x", "line": 5},
		],
	}]}
	check.deny == {{
		"msg": "sshd pid 5 (127.0.0.1:2222; /x): Match Group admins (/x:3) sets PermitRootLogin yes at /x:4: root may log in with a password; want no",
		"file": "/x", "line": 4,
	}} with input as {"ssh": {"daemons": [d]}}
}

# The file says no, but the daemon loaded it before the edit: root may still
# be let in by what runs, which the wire cannot show.
running(config_newer) := {
	"pid": 812, "source": "process", "config_path": "/etc/ssh/sshd_config", "listen": ["127.0.0.1:22"],
	"permit_root_login": "no", "explicit": ["permitrootlogin"], "password_authentication": "no",
	"loaded_at": "2025-03-01T09:00:00Z", "loaded_from": "pid_file", "config_newer": config_newer,
	"newest_config": "/etc/ssh/sshd_config", "newest_config_modified": "2025-03-01T10:00:00Z",
	"wire": [{"address": "127.0.0.1:22", "source": "wire", "auth_methods": ["publickey"]}],
}

test_fail_stale if {
	check.deny == {{
		"msg": "sshd pid 812 (127.0.0.1:22; /etc/ssh/sshd_config) runs an older configuration than /etc/ssh/sshd_config (modified at 2025-03-01T10:00:00Z, after the daemon started at 2025-03-01T09:00:00Z): reload it (systemctl reload ssh)",
		"file": "/etc/ssh/sshd_config",
	}} with input as {"ssh": {"daemons": [running(true)]}}
}

test_fail_wire_offers_password_the_file_forbids if {
	d := json.patch(running(false), [{"op": "replace", "path": "/wire/0/auth_methods", "value": ["publickey", "password"]}])
	count(check.deny) == 1 with input as {"ssh": {"daemons": [d]}}
}

test_pass_fresh if {
	check.deny == set() with input as {"ssh": {"daemons": [running(false)]}}
}
