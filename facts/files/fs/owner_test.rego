package gpuhost.fs.owner_test

import data.gpuhost.fs.fixtures_test as fx
import data.gpuhost.fs.owner

test_good_passes if {
	owner.deny == set() with input as fx.with_files({}) with data.gpuhost.params as fx.params
	owner.error == set() with input as fx.with_files({}) with data.gpuhost.params as fx.params
}

test_wrong_owner if {
	b := array.concat([object.union(fx.bf("/etc/passwd", "regular", 1000, 0, "0644"), {"owner": "alice"})], array.slice(fx.benchmark, 1, 5))
	owner.deny == {{"msg": "/etc/passwd is owned by uid 1000 (alice); want uid 0", "file": "/etc/passwd", "subject": "/etc/passwd"}} with input as fx.with_files({"benchmark": b})
		with data.gpuhost.params as fx.params
}

test_symlink_missing_and_cron_file_not_judged if {
	b := [
		fx.bf("/etc/passwd", "symlink", 1000, 0, "0777"),
		{"path": "/etc/shadow", "pattern": "/etc/shadow", "directory": false, "type": "missing", "uid": 0, "gid": 0},
		object.union(fx.dir("/etc/cron.d", "0777"), {"type": "regular", "uid": 5}),
	]
	owner.deny == set() with input as fx.with_files({"benchmark": b}) with data.gpuhost.params as fx.params
}

test_directory_judged if {
	b := [object.union(fx.dir("/etc/cron.d", "0700"), {"uid": 7})]
	owner.deny == {{"msg": "/etc/cron.d is owned by uid 7; want uid 0", "file": "/etc/cron.d", "subject": "/etc/cron.d"}} with input as fx.with_files({"benchmark": b})
		with data.gpuhost.params as fx.params
}

test_fail_closed_without_params if {
	owner.deny == {"parameter files_owner is not set"} with input as fx.with_files({}) with data.gpuhost.params as {}
}

test_unknown_path_errors if {
	owner.error == {"params files_owner names /etc/nope, which the files collector does not read, so it was not judged"} with input as fx.with_files({})
		with data.gpuhost.params as {"files_owner": {"/etc/nope": 0}}
}
