package gpuhost.fs.ssh_public_keys_test

import data.gpuhost.fs.fixtures_test as fx
import data.gpuhost.fs.ssh_public_keys as check

pub(path, type, mode) := {"path": path, "pattern": "/etc/ssh/*.pub", "directory": false, "type": type, "uid": 0, "gid": 0, "mode": mode}

test_good_passes if {
	check.deny == set() with input as fx.with_files({})
}

test_writable_fails if {
	b := [pub("/etc/ssh/a.pub", "regular", "0664"), pub("/etc/ssh/b.pub", "regular", "0444"), pub("/etc/ssh/c.pub", "symlink", "0777")]
	check.deny == {{"msg": "/etc/ssh/a.pub has mode 0664; want 0644 or stricter", "file": "/etc/ssh/a.pub", "subject": "/etc/ssh/a.pub"}} with input as fx.with_files({"benchmark": b})
}
