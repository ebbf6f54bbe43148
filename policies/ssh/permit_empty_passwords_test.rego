package gpuhost.ssh.permit_empty_passwords_test

import data.gpuhost.ssh.permit_empty_passwords as check

facts(v) := {"target": {"kind": "image"}, "ssh": {"config_path": "/etc/ssh/sshd_config", "permit_empty_passwords": v}}

test_pass_no if {
	check.deny == set() with input as facts("no")
}

test_fail_yes if {
	check.deny == {"PermitEmptyPasswords is \"yes\" in the sshd configuration (/etc/ssh/sshd_config); want no"} with input as facts("yes")
}
