package gpuhost.fs.unowned_test

import data.gpuhost.fs.fixtures_test as fx
import data.gpuhost.fs.unowned

test_good_passes if {
	unowned.deny == set() with input as fx.with_files({})
}

test_uid_no_account_has if {
	owners := array.concat(fx.tree_walk.owners, [{"uid": 4242, "count": 3, "paths": ["/opt/a", "/opt/b"]}])
	unowned.deny == {
		{"msg": "/opt/a is owned by uid 4242, which no account has", "file": "/opt/a", "subject": "/opt/a"},
		{"msg": "/opt/b is owned by uid 4242, which no account has", "file": "/opt/b", "subject": "/opt/b"},
		"1 more files owned by uid 4242, which no account has, than the 2 listed",
	} with input as fx.with_files({"walk": object.union(fx.tree_walk, {"owners": owners})})
}

test_incomplete_walk_errors if {
	w := object.union(fx.tree_walk, {"complete": false, "stopped": "stopped after 100 entries: context deadline exceeded"})
	unowned.error == {"the walk of the tree is incomplete (100 entries seen), so it cannot pass: stopped after 100 entries: context deadline exceeded"} with input as fx.with_files({"walk": w})
}
