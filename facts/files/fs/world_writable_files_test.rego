package gpuhost.fs.world_writable_files_test

import data.gpuhost.fs.fixtures_test as fx
import data.gpuhost.fs.world_writable_files as check

test_good_passes if {
	check.deny == set() with input as fx.with_files({})
}

test_world_writable_files_fail_outside_oval_exceptions if {
	paths := ["/opt/app/run.sh", "/proc/1/x", "/sys/kernel/y", "/selinux/access", "/selinux/other"]
	w := object.union(fx.tree_walk, {"world_writable_files": {"count": 5, "paths": paths}})
	check.deny == {
		{"msg": "/opt/app/run.sh is writable by anyone", "file": "/opt/app/run.sh", "subject": "/opt/app/run.sh"},
		{"msg": "/selinux/other is writable by anyone", "file": "/selinux/other", "subject": "/selinux/other"},
	} with input as fx.with_files({"walk": w})
}

test_past_the_sample_fails if {
	w := object.union(fx.tree_walk, {"world_writable_files": {"count": 2, "paths": ["/proc/1/x"]}})
	check.deny == {"1 more world-writable files than the 1 listed"} with input as fx.with_files({"walk": w})
}

test_unread_directory_errors if {
	w := object.union(fx.tree_walk, {"complete": false, "unread": ["/srv/locked: permission denied"]})
	check.error == {"the walk of the tree is incomplete (100 entries seen), so it cannot pass: could not read /srv/locked: permission denied"} with input as fx.with_files({"walk": w})
}
