package gpuhost.fs.mode_test

import data.gpuhost.fs.fixtures_test as fx
import data.gpuhost.fs.mode

test_good_passes if {
	mode.deny == set() with input as fx.with_files({}) with data.gpuhost.params as fx.params
}

test_stricter_passes if {
	b := [fx.bf("/etc/passwd", "regular", 0, 0, "0600"), fx.bf("/etc/shadow", "regular", 0, 42, "0000"), fx.dir("/etc/cron.d", "0500")]
	mode.deny == set() with input as fx.with_files({"benchmark": b}) with data.gpuhost.params as fx.params
}

test_looser_and_special_bits_fail if {
	b := [fx.bf("/etc/passwd", "regular", 0, 0, "0664"), fx.bf("/etc/shadow", "regular", 0, 42, "0640"), fx.dir("/etc/cron.d", "1700")]
	mode.deny == {
		{"msg": "/etc/passwd has mode 0664; want 0644 or stricter", "file": "/etc/passwd", "subject": "/etc/passwd"},
		{"msg": "/etc/shadow has mode 0640; want 0000 or stricter", "file": "/etc/shadow", "subject": "/etc/shadow"},
		{"msg": "/etc/cron.d has mode 1700; want 0700 or stricter", "file": "/etc/cron.d", "subject": "/etc/cron.d"},
	} with input as fx.with_files({"benchmark": b}) with data.gpuhost.params as fx.params
}

test_symlink_not_judged if {
	b := [fx.bf("/etc/passwd", "symlink", 0, 0, "0777")]
	mode.deny == set() with input as fx.with_files({"benchmark": b}) with data.gpuhost.params as fx.params
}

test_fail_closed_without_params if {
	mode.deny == {"parameter files_mode is not set"} with input as fx.with_files({}) with data.gpuhost.params as {}
}

test_unknown_path_errors if {
	mode.error == {"params files_mode names /etc/nope, which the files collector does not read, so it was not judged"} with input as fx.with_files({})
		with data.gpuhost.params as {"files_mode": {"/etc/nope": "0644"}}
}
