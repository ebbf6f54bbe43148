package gpuhost.fs.home_modes_test

import data.gpuhost.fs.fixtures_test as fx
import data.gpuhost.fs.home_modes

home(user, uid, path, type, is_dir, mode) := {"user": user, "uid": uid, "gid": uid, "path": path, "type": type, "is_dir": is_dir, "mode": mode}

test_good_passes if {
	home_modes.deny == set() with input as fx.with_files({})
	home_modes.error == set() with input as fx.with_files({})
}

test_open_home_and_symlinked_home_fail if {
	h := [
		home("alice", 1000, "/home/alice", "directory", true, "0755"),
		home("bob", 1001, "/home/shared", "directory", true, "0775"),
		home("bob2", 1002, "/home/shared", "directory", true, "0775"),
		home("carol", 1003, "/home/carol", "symlink", true, "0777"),
		home("dave", 1004, "/home/dave", "regular", false, "0777"),
		home("svc", 999, "/srv/svc", "directory", true, "0777"),
		home("nobody", 65534, "/tmp", "directory", true, "1777"),
		home("erin", 1005, "/home/erin", "directory", true, "0700"),
	]
	home_modes.deny == {
		{"msg": "/home/alice, the home directory of alice, has mode 0755; want 0750 or stricter", "file": "/home/alice", "subject": "/home/alice"},
		{"msg": "/home/shared, the home directory of bob, bob2, has mode 0775; want 0750 or stricter", "file": "/home/shared", "subject": "/home/shared"},
		{
			"msg": "/home/carol, the home directory of carol, is a symlink to a directory; OpenSCAP's rule wants the directory itself",
			"file": "/home/carol", "subject": "/home/carol",
		},
	} with input as fx.with_files({"homes": h})
}

test_incomplete_homes_error if {
	home_modes.error == {"the home directories were not read whole, so they cannot pass: listing /home/alice: permission denied"} with input as fx.with_files({"homes_incomplete": "listing /home/alice: permission denied"})
}
