package gpuhost.fs.ssh_private_keys_test

import data.gpuhost.fs.fixtures_test as fx
import data.gpuhost.fs.ssh_private_keys as check

key(path, type, uid, gid, mode) := {"path": path, "pattern": "/etc/ssh/*_key", "directory": false, "type": type, "uid": uid, "gid": gid, "mode": mode}

test_good_passes if {
	check.deny == set() with input as fx.with_files({})
}

test_each_fault_named if {
	b := [
		key("/etc/ssh/ssh_host_rsa_key", "regular", 1000, 0, "0600"),
		key("/etc/ssh/ssh_host_ecdsa_key", "regular", 0, 0, "0640"),
		key("/etc/ssh/ssh_host_dsa_key", "regular", 0, 5, "0400"),
		key("/etc/ssh/ssh_host_ed25519_key", "regular", 0, 0, "0400"),
		key("/etc/ssh/linked_key", "symlink", 9, 9, "0777"),
	]
	check.deny == {
		{"msg": "/etc/ssh/ssh_host_rsa_key is owned by uid 1000; want root:root (0:0) and mode 0600 or stricter", "file": "/etc/ssh/ssh_host_rsa_key", "subject": "/etc/ssh/ssh_host_rsa_key"},
		{"msg": "/etc/ssh/ssh_host_ecdsa_key has mode 0640; want root:root (0:0) and mode 0600 or stricter", "file": "/etc/ssh/ssh_host_ecdsa_key", "subject": "/etc/ssh/ssh_host_ecdsa_key"},
		{"msg": "/etc/ssh/ssh_host_dsa_key belongs to gid 5; want root:root (0:0) and mode 0600 or stricter", "file": "/etc/ssh/ssh_host_dsa_key", "subject": "/etc/ssh/ssh_host_dsa_key"},
	} with input as fx.with_files({"benchmark": b})
}

test_all_faults_at_once if {
	b := [key("/etc/ssh/ssh_host_rsa_key", "regular", 1, 2, "0644")]
	check.deny == {{
		"msg": "/etc/ssh/ssh_host_rsa_key is owned by uid 1 and belongs to gid 2 and has mode 0644; want root:root (0:0) and mode 0600 or stricter",
		"file": "/etc/ssh/ssh_host_rsa_key", "subject": "/etc/ssh/ssh_host_rsa_key",
	}} with input as fx.with_files({"benchmark": b})
}
