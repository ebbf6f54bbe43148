package gpuhost.ssh.permit_empty_passwords_test

import data.gpuhost.ssh.permit_empty_passwords as check

facts(v) := {"target": {"kind": "image"}, "ssh": {"config_path": "/etc/ssh/sshd_config", "permit_empty_passwords": v}}

test_pass_no if {
	check.deny == set() with input as facts("no")
}

test_fail_yes if {
	check.deny == {"sshd (/etc/ssh/sshd_config): PermitEmptyPasswords is \"yes\"; want no"} with input as facts("yes")
}

test_fail_match if {
	d := {"pid": 5, "listen": ["127.0.0.1:2222"], "config_path": "/x", "permit_empty_passwords": "no", "match": [{
		"file": "/x", "line": 3, "criteria": "Address 10.0.0.0/8",
		"settings": [{"keyword": "permitemptypasswords", "value": "yes", "file": "/x", "line": 4}],
	}]}
	check.deny == {{
		"msg": "sshd pid 5 (127.0.0.1:2222; /x): Match Address 10.0.0.0/8 (/x:3) sets PermitEmptyPasswords \"yes\" at /x:4; want no",
		"file": "/x", "line": 4,
	}} with input as {"ssh": {"daemons": [d]}}
}
