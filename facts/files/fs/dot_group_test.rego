package gpuhost.fs.dot_group_test

import data.gpuhost.fs.dot_group
import data.gpuhost.fs.fixtures_test as fx

dot(path, home, uid, gid) := {"path": path, "home": home, "type": "regular", "uid": uid, "gid": gid}

homes := [
	{"user": "alice", "uid": 1000, "gid": 1000, "path": "/home/alice", "type": "directory", "is_dir": true, "mode": "0750"},
	{"user": "bob", "uid": 1001, "gid": 1000, "path": "/home/bob", "type": "directory", "is_dir": true, "mode": "0750"},
	{"user": "carol", "uid": 1002, "gid": 1002, "path": "/home/carol", "type": "directory", "is_dir": true, "mode": "0750"},
	{"user": "svc", "uid": 1500, "gid": 999, "path": "/srv/svc", "type": "directory", "is_dir": true, "mode": "0750"},
]

test_good_passes if {
	dot_group.deny == set() with input as fx.with_files({})
}

test_own_group_passes if {
	d := [dot("/home/carol/.profile", "/home/carol", 1002, 1002), dot("/srv/svc/.x", "/srv/svc", 0, 0)]
	dot_group.deny == set() with input as fx.with_files({"homes": homes, "dot_files": d})
}

test_root_group_and_shared_primary_group_fail if {
	d := [dot("/home/carol/.profile", "/home/carol", 1002, 0), dot("/home/alice/.bashrc", "/home/alice", 1000, 1000)]
	dot_group.deny == {
		{"msg": "/home/carol/.profile belongs to gid 0, no interactive user's primary group", "file": "/home/carol/.profile", "subject": "/home/carol/.profile"},
		{
			"msg": "/home/alice/.bashrc belongs to gid 1000, the primary group of 2 interactive users; OpenSCAP's rule wants it to be exactly one's",
			"file": "/home/alice/.bashrc", "subject": "/home/alice/.bashrc",
		},
	} with input as fx.with_files({"homes": homes, "dot_files": d})
}

test_incomplete_homes_error if {
	dot_group.error == {"the home directories were not read whole, so they cannot pass: listing /home/carol: permission denied"} with input as fx.with_files({"homes_incomplete": "listing /home/carol: permission denied"})
}
