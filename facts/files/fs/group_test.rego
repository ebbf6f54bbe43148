package gpuhost.fs.group_test

import data.gpuhost.fs.fixtures_test as fx
import data.gpuhost.fs.group

test_good_passes if {
	group.deny == set() with input as fx.with_files({}) with data.gpuhost.params as fx.params
}

test_wrong_group if {
	b := [object.union(fx.bf("/etc/shadow", "regular", 0, 0, "0000"), {"group": "root"}), fx.bf("/etc/passwd", "regular", 0, 42, "0644")]
	group.deny == {
		{"msg": "/etc/shadow belongs to gid 0 (root); want gid 42", "file": "/etc/shadow", "subject": "/etc/shadow"},
		{"msg": "/etc/passwd belongs to gid 42; want gid 0", "file": "/etc/passwd", "subject": "/etc/passwd"},
	} with input as fx.with_files({"benchmark": b}) with data.gpuhost.params as fx.params
}

test_symlink_not_judged if {
	b := [fx.bf("/etc/shadow", "symlink", 0, 0, "0777")]
	group.deny == set() with input as fx.with_files({"benchmark": b}) with data.gpuhost.params as fx.params
}

test_fail_closed_without_params if {
	group.deny == {"parameter files_group is not set"} with input as fx.with_files({}) with data.gpuhost.params as {}
}

test_unknown_path_errors if {
	group.error == {"params files_group names /etc/nope, which the files collector does not read, so it was not judged"} with input as fx.with_files({})
		with data.gpuhost.params as {"files_group": {"/etc/nope": 0}}
}
