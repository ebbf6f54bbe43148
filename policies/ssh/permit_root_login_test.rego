package gpuhost.ssh.permit_root_login_test

import data.gpuhost.ssh.permit_root_login as check

facts(v, explicit) := {"target": {"kind": "rootfs"}, "ssh": {"config_path": "/etc/ssh/sshd_config", "permit_root_login": v, "explicit": explicit}}

test_pass_no if {
	check.deny == set() with input as facts("no", ["permitrootlogin"])
	check.deny == set() with input as facts("No", ["permitrootlogin"])
}

test_fail_yes if {
	check.deny == {"PermitRootLogin is yes (set in /etc/ssh/sshd_config): root may log in with a password"} with input as facts("yes", ["permitrootlogin"])
}

test_fail_prohibit_password_default if {
	check.deny == {"PermitRootLogin is prohibit-password (OpenSSH default): root may still log in with a key; want no"} with input as facts("prohibit-password", [])
}

test_fail_without_password if {
	check.deny == {"PermitRootLogin is without-password (set in /etc/ssh/sshd_config): root may still log in with a key; want no"} with input as facts("without-password", ["permitrootlogin"])
}

test_fail_unknown_value if {
	check.deny == {"PermitRootLogin has the unrecognised value \"maybe\" (set in /etc/ssh/sshd_config); want no"} with input as facts("maybe", ["permitrootlogin"])
}
