package gpuhost.ssh.password_authentication_test

import data.gpuhost.ssh.password_authentication as check

facts(pw, kbd) := {"target": {"kind": "host"}, "ssh": {
	"config_path": "/etc/ssh/sshd_config",
	"password_authentication": pw,
	"kbd_interactive_authentication": kbd,
}}

test_pass_both_no if {
	check.deny == set() with input as facts("no", "no")
}

test_fail_password if {
	check.deny == {"PasswordAuthentication is \"yes\" in the sshd configuration (/etc/ssh/sshd_config); want no"} with input as facts("yes", "no")
}

test_fail_both if {
	check.deny == {
		"PasswordAuthentication is \"yes\" in the sshd configuration (/etc/ssh/sshd_config); want no",
		"KbdInteractiveAuthentication is \"yes\" in the sshd configuration (/etc/ssh/sshd_config); want no",
	} with input as facts("yes", "yes")
}

test_fail_missing_field if {
	check.deny == {"KbdInteractiveAuthentication is \"\" in the sshd configuration (/etc/ssh/sshd_config); want no"} with input as {"target": {"kind": "host"}, "ssh": {"config_path": "/etc/ssh/sshd_config", "password_authentication": "no"}}
}
