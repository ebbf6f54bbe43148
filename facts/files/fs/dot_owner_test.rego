package gpuhost.fs.dot_owner_test

import data.gpuhost.fs.dot_owner
import data.gpuhost.fs.fixtures_test as fx

dot(path, home, uid, gid) := {"path": path, "home": home, "type": "regular", "uid": uid, "gid": gid}

homes := [
	{"user": "alice", "uid": 1000, "gid": 1000, "path": "/home/alice", "type": "directory", "is_dir": true, "mode": "0750"},
	{"user": "bob", "uid": 1001, "gid": 1000, "path": "/home/bob", "type": "directory", "is_dir": true, "mode": "0750"},
	{"user": "bob2", "uid": 1001, "gid": 1002, "path": "/home/bob2", "type": "directory", "is_dir": true, "mode": "0750"},
	{"user": "svc", "uid": 999, "gid": 1500, "path": "/srv/svc", "type": "directory", "is_dir": true, "mode": "0750"},
]

test_good_passes if {
	dot_owner.deny == set() with input as fx.with_files({})
}

test_any_interactive_uid_passes if {
	d := [dot("/home/alice/.bashrc", "/home/alice", 1000, 1000), dot("/home/alice/sub/.x", "/home/alice", 1000, 0)]
	dot_owner.deny == set() with input as fx.with_files({"homes": homes, "dot_files": d})
}

test_root_owned_and_shared_uid_fail if {
	d := [
		dot("/home/alice/.bash_history", "/home/alice", 0, 0),
		dot("/home/bob/.profile", "/home/bob", 1001, 1000),
		dot("/srv/svc/.x", "/srv/svc", 0, 0),
	]
	dot_owner.deny == {
		{"msg": "/home/alice/.bash_history is owned by uid 0, no interactive user's", "file": "/home/alice/.bash_history", "subject": "/home/alice/.bash_history"},
		{
			"msg": "/home/bob/.profile is owned by uid 1001, which 2 interactive users share; OpenSCAP's rule wants it to be exactly one's",
			"file": "/home/bob/.profile", "subject": "/home/bob/.profile",
		},
	} with input as fx.with_files({"homes": homes, "dot_files": d})
}

test_incomplete_homes_error if {
	dot_owner.error == {"the home directories were not read whole, so they cannot pass: more than 10000 dot files in the home directories"} with input as fx.with_files({"homes_incomplete": "more than 10000 dot files in the home directories"})
}
