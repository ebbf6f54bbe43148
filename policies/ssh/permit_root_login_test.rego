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
