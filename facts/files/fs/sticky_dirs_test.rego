package gpuhost.fs.sticky_dirs_test

import data.gpuhost.fs.fixtures_test as fx
import data.gpuhost.fs.sticky_dirs as check

test_good_passes if {
	check.deny == set() with input as fx.with_files({})
	check.error == set() with input as fx.with_files({})
}

test_world_writable_dirs_fail if {
	w := object.union(fx.tree_walk, {"world_writable_dirs": {"count": 3, "paths": ["/opt/drop", "/srv/x"]}})
	check.deny == {
		{"msg": "/opt/drop is writable by anyone and has no sticky bit", "file": "/opt/drop", "subject": "/opt/drop"},
		{"msg": "/srv/x is writable by anyone and has no sticky bit", "file": "/srv/x", "subject": "/srv/x"},
		"1 more world-writable directories without the sticky bit than the 2 listed",
	} with input as fx.with_files({"walk": w})
}

test_incomplete_walk_errors if {
	w := object.union(fx.tree_walk, {"complete": false, "stopped": "stopped at its limit of 100 entries"})
	check.error == {"the walk of the tree is incomplete (100 entries seen), so it cannot pass: stopped at its limit of 100 entries"} with input as fx.with_files({"walk": w})
}
