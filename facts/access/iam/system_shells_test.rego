package gpuhost.iam.system_shells_test

import data.gpuhost.iam.system_shells

users(list) := {"access": {"users": [{"name": n, "uid": uid, "gid": uid, "shell": sh, "password": "locked"} | some [n, uid, sh] in list]}}

test_pass if {
	system_shells.deny == set() with input as users([
		["root", 0, "/bin/bash"], ["sync", 4, "/bin/sync"], ["daemon", 1, "/usr/sbin/nologin"],
		["_chrony", 105, "/bin/false"], ["alice", 1000, "/bin/bash"],
	])
}

test_fail_service_with_shell if {
	system_shells.deny == {{
		"msg": "system account postgres (uid 112) has the login shell /bin/bash",
		"subject": "postgres", "file": "/etc/passwd",
	}} with input as users([["postgres", 112, "/bin/bash"], ["alice", 1000, "/bin/bash"]])
}
