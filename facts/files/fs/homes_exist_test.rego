package gpuhost.fs.homes_exist_test

import data.gpuhost.fs.fixtures_test as fx
import data.gpuhost.fs.homes_exist

home(user, uid, path, is_dir) := {"user": user, "uid": uid, "gid": uid, "path": path, "type": "directory", "is_dir": is_dir, "mode": "0700"}

test_good_passes if {
	homes_exist.deny == set() with input as fx.with_files({})
}

test_no_interactive_users_passes if {
	homes_exist.deny == set() with input as fx.with_files({"homes": [home("nobody", 65534, "/nonexistent", false)]})
}

test_missing_home_fails if {
	h := [home("alice", 1000, "/home/alice", true), home("carol", 1002, "/home/carol", false), home("svc", 999, "/srv/none", false)]
	homes_exist.deny == {{"msg": "carol's home directory /home/carol does not exist", "file": "/home/carol", "subject": "/home/carol"}} with input as fx.with_files({"homes": h})
}

test_shared_home_fails if {
	h := [home("bob", 1001, "/home/bob", true), home("bob2", 1003, "/home/bob", true)]
	homes_exist.deny == {{
		"msg": "/home/bob is the home directory of 2 interactive users (bob, bob2); OpenSCAP's rule counts one home directory per interactive user",
		"file": "/home/bob", "subject": "/home/bob",
	}} with input as fx.with_files({"homes": h})
}

test_incomplete_homes_error if {
	homes_exist.error == {"the home directories were not read whole, so they cannot pass: stopped: context canceled"} with input as fx.with_files({"homes_incomplete": "stopped: context canceled"})
}
