package gpuhost.audit.auditd_test

import data.gpuhost.audit.auditd as check

on := {"installed": true, "enabled": true, "active": "active"}

test_pass_installed_enabled if {
	check.deny == set() with input as {"target": {"kind": "rootfs"}, "audit": on}
}

test_fail_not_installed if {
	check.deny == {"auditd is not installed (no /sbin/auditd or /usr/sbin/auditd): privileged actions leave no record"} with input as {"target": {"kind": "rootfs"}, "audit": {"installed": false, "enabled": false}}
}

test_fail_not_enabled if {
	count(check.deny) == 1 with input as {"target": {"kind": "image"}, "audit": object.union(on, {"enabled": false})}
}

test_fail_live_inactive if {
	check.deny == {"auditd.service is failed, not active: nothing is recorded now"} with input as {"target": {"kind": "host"}, "audit": object.union(on, {"active": "failed"})}
}

test_offline_ignores_active if {
	check.deny == set() with input as {"target": {"kind": "rootfs"}, "audit": object.union(on, {"active": "failed"})}
}
