package gpuhost.iam.auditors_test

import data.gpuhost.iam.auditors
import data.gpuhost.iam.fixtures_test as fx

test_good_passes if {
	auditors.deny == set() with input as {"access": fx.good} with data.gpuhost.params as fx.params
}

test_auditor_sudo_and_writes_fail if {
	s := fx.sudo([fx.rule(["eve"], ["/usr/bin/journalctl"], false)], [])
	w := [
		{"path": "/etc/gpuhost", "mode": "drwxrwxr-x", "gid": 1102, "group": "gpuhost-audit", "group_writable": true, "world_writable": false},
		{"path": "/etc/motd", "mode": "-rw-rw-rw-", "gid": 0, "group": "root", "group_writable": false, "world_writable": true},
		{"path": "/etc/train", "mode": "drwxrwxr-x", "gid": 1101, "group": "gpuhost-dev", "group_writable": true, "world_writable": false},
	]
	auditors.deny == {
		{"msg": "/etc/sudoers:10 gives eve, an auditor, sudo (/usr/bin/journalctl)", "subject": "eve", "file": "/etc/sudoers", "line": 10},
		{"msg": "/etc/gpuhost (drwxrwxr-x) is writable by gpuhost-audit, an auditor group", "subject": "/etc/gpuhost"},
		{"msg": "/etc/motd (-rw-rw-rw-) is writable by everyone", "subject": "/etc/motd"},
	} with input as {"access": object.union(fx.good, {"sudo": s, "etc_writable": w})} with data.gpuhost.params as fx.params
}
