package gpuhost.ssh.options_test

import data.gpuhost.ssh.options

params := {"ssh_options": {
	"ignorerhosts": {"equals": "yes"},
	"loglevel": {"in": ["INFO", "VERBOSE"]},
	"maxauthtries": {"max": 4},
	"clientaliveinterval": {"min": 1, "max": 300},
	"logingracetime": {"min": 1},
}}

ssh(opts, locations) := {"ssh": {"config_path": "/etc/ssh/sshd_config", "options": opts, "locations": locations}}

good := {"ignorerhosts": "yes", "loglevel": "verbose", "maxauthtries": "4", "clientaliveinterval": "300", "logingracetime": "60"}

test_pass if {
	options.deny == set() with input as ssh(good, {}) with data.gpuhost.params as params
}

test_fail_each_kind if {
	opts := object.union(good, {"ignorerhosts": "no", "loglevel": "debug3", "maxauthtries": "6", "clientaliveinterval": "0", "logingracetime": "0"})
	f := ssh(opts, {"maxauthtries": {"file": "/etc/ssh/sshd_config", "line": 12}})
	options.deny == {
		{"msg": "sshd (/etc/ssh/sshd_config): ignorerhosts is no; want yes", "subject": "ignorerhosts"},
		{"msg": "sshd (/etc/ssh/sshd_config): loglevel is debug3; want INFO or VERBOSE", "subject": "loglevel"},
		{
			"msg": "sshd (/etc/ssh/sshd_config): maxauthtries is 6; want at most 4",
			"subject": "maxauthtries", "file": "/etc/ssh/sshd_config", "line": 12,
		},
		{"msg": "sshd (/etc/ssh/sshd_config): clientaliveinterval is 0; want between 1 and 300", "subject": "clientaliveinterval"},
		{"msg": "sshd (/etc/ssh/sshd_config): logingracetime is 0; want at least 1", "subject": "logingracetime"},
	} with input as f with data.gpuhost.params as params
}

test_fail_in_a_match_block if {
	f := {"ssh": {
		"config_path": "/etc/ssh/sshd_config", "options": good,
		"match": [{"criteria": "User alice", "file": "/etc/ssh/sshd_config", "line": 30, "settings": [{"keyword": "maxauthtries", "value": "10", "file": "/etc/ssh/sshd_config", "line": 31}]}],
	}}
	count(options.deny) == 1 with input as f with data.gpuhost.params as params
}

test_skip_old_facts if {
	f := {"ssh": {"config_path": "/etc/ssh/sshd_config"}}
	options.skip == {"the ssh facts carry no sshd options (collected by an older gpuhost)"} with input as f
		with data.gpuhost.params as params
	options.deny == set() with input as f with data.gpuhost.params as params
}

test_no_params_no_findings if {
	options.deny == set() with input as ssh({"ignorerhosts": "no"}, {}) with data.gpuhost.params as {}
}
